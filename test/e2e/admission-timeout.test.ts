// A webhook that cannot answer in time: the API server applies the failurePolicy.
// The slow server in the first block is deliberately not annex; the second shows annex
// answering before ?timeout= even when its policies are slow or pathological.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ensureCertificates } from '../../src/certs/index.js';
import { MAX_RULES } from '../../src/policy/schema.js';
import { eventually } from '../cluster/kubelet.js';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  installPolicyCrd,
  featureRegistrations,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  type ClusterInfo,
} from '../cluster/harness.js';

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

/** Marks this file's policies, to wait for and delete them together. */
const TEST_LABEL = 'annex.dev/e2e-slow-policy';

describeCluster('annex answers within ?timeout= even when a policy is slow', (c: ClusterInfo) => {
  let annex: TestAnnex;
  let ns = '';
  let registered: any[] = [];
  let created = 0;
  const policy = (name: string, failurePolicy: string, selector: string, validate: any[]) => ({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name, labels: { [TEST_LABEL]: 'true' } },
    spec: {
      actions: ['Deny'],
      failurePolicy,
      match: {
        kinds: ['ConfigMap'],
        namespaces: [ns],
        objectSelector: { matchLabels: { slow: selector } },
      },
      validate,
    },
  });
  // 3,000 linear-time rules over ~900 KB each: 5–20 ms a rule, tens of seconds an object,
  // far more than the webhook's 5 s timeout. A policy holds at most MAX_RULES rules (the
  // CRD's bound), so each failurePolicy gets ⌈3000 / MAX_RULES⌉ policies of them.
  const slow = (failurePolicy: string, selector: string) =>
    Array.from({ length: Math.ceil(3000 / MAX_RULES) }, (_, p) =>
      policy(
        `slow-${selector}-${p}`,
        failurePolicy,
        selector,
        Array.from({ length: MAX_RULES }, (_, r) => ({
          name: `r${r}`,
          path: '$.data.*',
          schema: { type: 'string', pattern: `^(?:[a-z]*|x${p}-${r})$` },
        })),
      ),
    );
  const configMap = (name: string, label: string, v: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, labels: { slow: label } },
    data: { v },
  });
  const create = (o: unknown) =>
    apiRequest('POST', `/api/v1/namespaces/${ns}/configmaps`, { body: o });

  beforeAll(async () => {
    ns = await createNamespace('slowpolicy');
    await installPolicyCrd();
    annex = await startTestAnnex({
      admission: {
        names: { enabled: false },
        defaults: { enabled: false },
        clientCA: c.webhookClientCaFile,
      },
      metrics: { enabled: false },
      policy: { enabled: true, native: false, events: false },
    } as any);
    // Created, not applied: kubectl apply's last-applied annotation is limited to 256 KiB.
    for (const p of [
      ...slow('Fail', 'fail'),
      ...slow('Ignore', 'ignore'),
      policy('backtracking', 'Fail', 'regex', [
        {
          name: 'as',
          path: '$.data.v',
          schema: { type: 'string', pattern: '^(a+)+$' },
          message: 'must be a run of a',
        },
      ]),
    ]) {
      const r = await apiRequest('POST', '/apis/policy.annex.dev/v1alpha1/admissionpolicies', {
        body: p,
      });
      expect(`${r.status} ${r.status === 201 ? '' : r.body}`).toBe('201 ');
      created++;
    }
    registered = featureRegistrations(annex, 'policy', {
      webhooks: ['policies.annex.dev'],
      namespace: ns,
    });
    await ensureAnnexService();
    await applyObjects(registered);
    // Each policy compiled and reported ready by annex…
    await eventually(async () => {
      const out = await kubectl([
        'get',
        'admissionpolicies',
        '-l',
        TEST_LABEL,
        '-o',
        'jsonpath={.items[*].status.ready}',
      ]);
      const ready = out.stdout.trim().split(' ');
      return ready.length === created && ready.every((r) => r === 'true') ? true : undefined;
    }, 60_000);
    // …and the API server routing ConfigMaps to annex: until then, creates pass.
    for (let i = 0; i < 80; i++) {
      const r = await create(configMap(`probe${i}`, 'regex', 'b'));
      if (r.status === 400 || r.status === 422) break;
      await new Promise((res) => setTimeout(res, 250));
    }
  }, 180_000);

  afterAll(async () => {
    await kubectl(['delete', 'admissionpolicies', '-l', TEST_LABEL]);
    if (registered.length) await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    await annex?.stop();
  });

  it('a catastrophic-backtracking pattern is decided at once', async () => {
    const t0 = performance.now();
    const r = await create(configMap('as', 'regex', `${'a'.repeat(40)}!`));
    const ms = performance.now() - t0;
    console.log(`slow policy: ^(a+)+$ on 40 a's and "!" decided in ${ms.toFixed(0)} ms`);
    expect(r.status).toBe(422);
    expect(r.json().message).toContain('must be a run of a');
    expect(ms).toBeLessThan(2000);
    expect((await create(configMap('as2', 'regex', 'a'.repeat(40)))).status).toBe(201);
  });

  it('Fail: rules the budget leaves no time for deny, before the API server gives up', async () => {
    const t0 = performance.now();
    const r = await create(configMap('big-fail', 'fail', 'a'.repeat(900_000)));
    const ms = performance.now() - t0;
    console.log(`slow policy (Fail): answered in ${ms.toFixed(0)} ms (webhook timeout 5 s)`);
    expect(r.status).toBe(422);
    expect(r.json().message).toContain('the evaluation ran out of its time budget');
    // Not the API server's "context deadline exceeded": annex answered within the 5 s. The
    // API server's own timer is the bound; a wall-clock one here would also count its work
    // on a 900 KB object, which is not annex's and grows with the machine's load.
    expect(r.json().message).not.toContain('context deadline exceeded');
    // One cause for a policy's rules left, not one per rule: a small answer.
    expect(r.json().details.causes.length).toBeLessThanOrEqual(Math.ceil(3000 / MAX_RULES));
  }, 30_000);

  it('Ignore: the same work is cut short and the object admitted', async () => {
    const t0 = performance.now();
    const r = await create(configMap('big-ignore', 'ignore', 'a'.repeat(900_000)));
    const ms = performance.now() - t0;
    console.log(`slow policy (Ignore): answered in ${ms.toFixed(0)} ms`);
    // The webhook's failurePolicy is Fail: had annex overrun ?timeout=, the API server
    // would answer 500 (its own timer, as above, is the bound).
    expect(r.status).toBe(201);
  }, 30_000);
});
