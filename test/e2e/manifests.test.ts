// The install (`kubectl apply -k manifests/`) renders with the control plane's own kubectl
// (kustomize inside), and the real API server accepts every object in a server dry run.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ensureCertificates } from '../../src/certs/index.js';
import { ensureAnnexService } from '../cluster/annex.js';
import { describeCluster, kubectl, kubectlOk } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');

describeCluster('manifests/ (kustomize base)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-manifests-'));
    for (const d of ['manifests', 'apiservice', 'webhooks'])
      cpSync(join(repo, d), join(dir, d), { recursive: true });
    rmSync(join(dir, 'manifests', 'certs'), { recursive: true, force: true });
    // The documented first step: certificates for annex.annex-system.svc into manifests/certs.
    await ensureCertificates({
      dir: join(dir, 'manifests', 'certs'),
      service: 'annex',
      namespace: 'annex-system',
    });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('renders every object in its namespace, with the auth reader binding in kube-system', async () => {
    const objs = parseAllDocuments(await kubectlOk(['kustomize', join(dir, 'manifests')])).map(
      (d) => d.toJSON(),
    );
    const where = Object.fromEntries(
      objs.map((o) => [
        `${o.kind}/${o.metadata.name.replace(/-[a-z0-9]{10}$/, '')}`,
        o.metadata.namespace ?? '',
      ]),
    );
    expect(where).toMatchObject({
      'Namespace/annex-system': '',
      'ServiceAccount/annex': 'annex-system',
      'RoleBinding/annex:extension-apiserver-authentication-reader': 'kube-system',
      'Deployment/annex': 'annex-system',
      'Service/annex': 'annex-system',
      'ConfigMap/annex-config': 'annex-system',
      'Secret/annex-tls': 'annex-system',
      'APIService/v1beta1.metrics.annex.dev': '',
      'ValidatingWebhookConfiguration/annex-names': '',
      'MutatingWebhookConfiguration/annex-defaults': '',
    });
    const deploy = objs.find((o) => o.kind === 'Deployment');
    expect(
      deploy.spec.template.spec.volumes.find((v: any) => v.name === 'config').configMap.name,
    ).toMatch(/^annex-config-[a-z0-9]{10}$/);
  });

  it('is accepted whole by the real API server (server-side dry run)', async () => {
    // A dry run creates no namespace, so annex-system must exist; and the e2e tests'
    // ExternalName Service has the same name as the real one: set it aside meanwhile.
    await ensureAnnexService();
    await kubectlOk(['-n', 'annex-system', 'delete', 'service', 'annex', '--ignore-not-found']);
    try {
      const r = await kubectl(['apply', '-k', join(dir, 'manifests'), '--dry-run=server']);
      expect(r.stderr).toBe('');
      const lines = r.stdout.trim().split('\n');
      expect(lines.every((l) => l.endsWith('(server dry run)'))).toBe(true);
      expect(lines).toContain('deployment.apps/annex created (server dry run)');
      expect(lines).toContain(
        'apiservice.apiregistration.k8s.io/v1beta1.metrics.annex.dev created (server dry run)',
      );
      expect(lines).toHaveLength(14);
    } finally {
      await ensureAnnexService();
    }
  });
});
