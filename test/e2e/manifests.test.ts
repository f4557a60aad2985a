// The install (`kubectl apply -k manifests/`) renders with the control plane's own kubectl
// (kustomize inside), and the real API server accepts every object in a server dry run.
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { ensureAnnexService } from '../cluster/annex.js';
import { describeCluster, kubectl, kubectlOk } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');

describeCluster('manifests/ (kustomize base)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-manifests-'));
    for (const d of ['manifests', 'apiservice', 'webhooks'])
      cpSync(join(repo, d), join(dir, d), { recursive: true });
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
      'ClusterRole/annex:ca-injector': '',
      'APIService/v1beta1.metrics.annex.dev': '',
      'ValidatingWebhookConfiguration/annex-names': '',
      'MutatingWebhookConfiguration/annex-defaults': '',
      'CustomResourceDefinition/admissionpolicies.policy.annex.dev': '',
    });
    const deploy = objs.find((o) => o.kind === 'Deployment');
    expect(
      deploy.spec.template.spec.volumes.find((v: any) => v.name === 'config').configMap.name,
    ).toMatch(/^annex-config-[a-z0-9]{10}$/);
  });

  it('ships a config that annex accepts, injecting exactly what its RBAC allows', async () => {
    const config = loadConfig({ file: join(repo, 'manifests', 'config.yaml') });
    const objs = parseAllDocuments(await kubectlOk(['kustomize', join(dir, 'manifests')])).map(
      (d) => d.toJSON(),
    );
    const names = (kind: string) => objs.filter((o) => o.kind === kind).map((o) => o.metadata.name);
    const injector = objs.find(
      (o) => o.kind === 'ClusterRole' && o.metadata.name === 'annex:ca-injector',
    );
    const allowed = (resource: string) =>
      injector.rules.find((r: any) => r.resources.includes(resource)).resourceNames;
    expect(config.tls.inject.apiServices).toEqual(names('APIService'));
    expect(config.tls.inject.apiServices).toEqual(allowed('apiservices'));
    expect(config.tls.inject.validatingWebhooks).toEqual(names('ValidatingWebhookConfiguration'));
    expect(config.tls.inject.validatingWebhooks).toEqual(
      allowed('validatingwebhookconfigurations'),
    );
    expect(config.tls.inject.mutatingWebhooks).toEqual(names('MutatingWebhookConfiguration'));
    expect(config.tls.inject.mutatingWebhooks).toEqual(allowed('mutatingwebhookconfigurations'));
  });

  it("grants annex's ServiceAccount what it needs and nothing around it", async () => {
    await ensureAnnexService(); // the namespace
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'rbac.yaml')]);
    // can-i resolves a custom resource through discovery: the CRD must be served.
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'crds', 'admissionpolicies.yaml')]);
    await kubectlOk(['apply', '-f', join(dir, 'manifests', 'crds', 'externalmetrics.yaml')]);
    await kubectlOk([
      'wait',
      '--for=condition=Established',
      'crd/admissionpolicies.policy.annex.dev',
      'crd/externalmetrics.metrics.annex.dev',
    ]);
    const sa = '--as=system:serviceaccount:annex-system:annex';
    const can = async (...args: string[]) =>
      (await kubectl(['auth', 'can-i', ...args, sa])).stdout.trim();
    const yes = [
      ['create', 'tokenreviews.authentication.k8s.io'],
      ['create', 'subjectaccessreviews.authorization.k8s.io'],
      ['get', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'],
      ['watch', 'configmaps/extension-apiserver-authentication', '-n', 'kube-system'],
      ['list', 'nodes'],
      ['get', 'nodes/metrics'],
      ['list', 'pods', '--all-namespaces'],
      ['patch', 'apiservices.apiregistration.k8s.io/v1beta1.metrics.annex.dev'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/annex-names'],
      ['patch', 'mutatingwebhookconfigurations.admissionregistration.k8s.io/annex-defaults'],
      ['watch', 'admissionpolicies.policy.annex.dev'],
      ['patch', 'admissionpolicies.policy.annex.dev', '--subresource=status'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/annex-policies'],
      ['create', 'events.events.k8s.io', '-n', 'default'],
      ['list', 'endpointslices.discovery.k8s.io', '-n', 'annex-system'],
      ['watch', 'externalmetrics.metrics.annex.dev', '--all-namespaces'],
      ['patch', 'externalmetrics.metrics.annex.dev', '--subresource=status', '-n', 'default'],
      ['list', 'jobs.batch', '--all-namespaces'],
      ['patch', 'apiservices.apiregistration.k8s.io/v1beta1.external.metrics.k8s.io'],
    ];
    const no = [
      ['patch', 'apiservices.apiregistration.k8s.io/v1.apps'],
      ['patch', 'validatingwebhookconfigurations.admissionregistration.k8s.io/someone-else'],
      ['create', 'apiservices.apiregistration.k8s.io'],
      ['get', 'secrets', '--all-namespaces'],
      ['get', 'configmaps', '-n', 'default'],
      ['create', 'pods', '-n', 'annex-system'],
      ['delete', 'nodes'],
      ['patch', 'admissionpolicies.policy.annex.dev'],
      ['patch', 'externalmetrics.metrics.annex.dev', '-n', 'default'],
    ];
    for (const a of yes) expect([a.join(' '), await can(...a)]).toEqual([a.join(' '), 'yes']);
    for (const a of no) expect([a.join(' '), await can(...a)]).toEqual([a.join(' '), 'no']);
    // The HPA controller's ServiceAccount reads both metric groups (as KEDA binds it). A
    // SubjectAccessReview, as the aggregated server asks: can-i would need discovery.
    for (const group of ['external.metrics.k8s.io', 'custom.metrics.k8s.io']) {
      const review = JSON.parse(
        await kubectlOk(['create', '-f', '-', '-o', 'json'], {
          input: JSON.stringify({
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SubjectAccessReview',
            spec: {
              user: 'system:serviceaccount:kube-system:horizontal-pod-autoscaler',
              groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'],
              resourceAttributes: {
                group,
                resource: 'queue_depth',
                verb: 'list',
                namespace: 'shop',
              },
            },
          }),
        }),
      );
      expect([group, review.status.allowed]).toEqual([group, true]);
    }
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
      // The CRD may already be served (the RBAC test above installs it for can-i).
      expect(
        lines.some((l) =>
          /^customresourcedefinition\.apiextensions\.k8s\.io\/admissionpolicies\.policy\.annex\.dev (created|configured|unchanged) \(server dry run\)$/.test(
            l,
          ),
        ),
      ).toBe(true);
      expect(
        lines.some((l) =>
          /^customresourcedefinition\.apiextensions\.k8s\.io\/externalmetrics\.metrics\.annex\.dev (created|configured|unchanged) \(server dry run\)$/.test(
            l,
          ),
        ),
      ).toBe(true);
      expect(lines).toContain(
        'apiservice.apiregistration.k8s.io/v1beta2.custom.metrics.k8s.io created (server dry run)',
      );
      expect(lines).toHaveLength(32);
    } finally {
      await ensureAnnexService();
    }
  });
});
