// A webhook that cannot answer in time: the API server applies the failurePolicy.
// The slow server here is deliberately not annex (annex answers before ?timeout=).
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureCertificates } from '../../src/certs/index.js';
import { applyObjects, deleteObjects } from '../cluster/annex.js';
import { createNamespace, describeCluster, kubectl } from '../cluster/harness.js';

describeCluster('failurePolicy when a webhook times out', () => {
  let server: Server;
  let dir: string;
  let ns: string;
  let configs: any[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-slow-'));
    const certs = await ensureCertificates({ dir, service: 'slow', namespace: 'annex-system' });
    // Accepts the review and never answers.
    server = createServer({ cert: certs.certPem, key: certs.keyPem }, () => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    ns = await createNamespace('slow');
    const hook = (name: string, policy: 'Fail' | 'Ignore', resource: string) => ({
      name,
      clientConfig: { url: `https://127.0.0.1:${port}/validate/slow`, caBundle: certs.caBundle },
      rules: [
        { operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: [resource] },
      ],
      failurePolicy: policy,
      sideEffects: 'None',
      timeoutSeconds: 1,
      admissionReviewVersions: ['v1'],
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
    });
    configs = [
      {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'annex-e2e-slow' },
        webhooks: [
          hook('fail.slow.annex.dev', 'Fail', 'configmaps'),
          hook('ignore.slow.annex.dev', 'Ignore', 'secrets'),
        ],
      },
    ];
    await applyObjects(configs);
  });

  afterAll(async () => {
    if (configs) await deleteObjects(configs);
    server?.closeAllConnections();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('Fail: the request is refused with the deadline error', async () => {
    let r = await kubectl(['-n', ns, 'create', 'configmap', 'c0', '--from-literal=a=b']);
    for (let i = 0; i < 40 && r.code === 0; i++) {
      // Until the API server has loaded the configuration, creates go through.
      await new Promise((res) => setTimeout(res, 250));
      r = await kubectl(['-n', ns, 'create', 'configmap', `c${i + 1}`, '--from-literal=a=b']);
    }
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(
      /Internal error occurred: failed calling webhook "fail\.slow\.annex\.dev": failed to call webhook: Post "https:\/\/127\.0\.0\.1:\d+\/validate\/slow\?timeout=1s": context deadline exceeded/,
    );
  });

  it('Ignore: the request goes through', async () => {
    const t0 = Date.now();
    const r = await kubectl(['-n', ns, 'create', 'secret', 'generic', 's1', '--from-literal=a=b']);
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('secret/s1 created');
    // It did wait for the webhook's 1 s timeout: the call was made and failed open.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
  });
});
