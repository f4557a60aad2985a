// Only the API server feeds decisions: annex with AdmissionPolicies (a Deny and an Audit
// policy) behind the real kube-apiserver, whose AdmissionConfiguration gives it a client
// certificate from ClusterInfo.webhookClientCaFile. Its reviews are recorded as
// AdmissionEvents and Events; a review forged by a Pod-like client (direct HTTPS to annex,
// with no certificate or one from another CA, carrying a fake userInfo) is answered but
// changes neither. /readyz?verbose says which callers annex saw, with and without
// admission.clientCA; admission.requireClientCert refuses the forger with a 401.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  annexGet,
  annexPost,
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  featureRegistrations,
  installPolicyCrd,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
  type ClusterInfo,
} from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

const repo = join(import.meta.dirname, '..', '..');
const POLICIES = '/apis/policy.annex.dev/v1alpha1/admissionpolicies';

describeCluster('admission callers: only the API server feeds decisions', (c: ClusterInfo) => {
  let ns = '';
  let a: TestAnnex;
  let registered: any[] = [];
  const started: TestAnnex[] = [];
  const policyNames = ['callers-deny', 'callers-audit'];

  /** A demo policy under its own name, limited to the test namespace. */
  const policy = (file: string, name: string) => {
    const p = parse(readFileSync(join(repo, 'policies', file), 'utf8'));
    p.metadata.name = name;
    p.spec.match.namespaces = [ns];
    return p;
  };
  const deployment = (name: string) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: {
        metadata: { labels: { app: 'x' } },
        spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
      },
    },
  });
  const hostNetworkPod = (name: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: { hostNetwork: true, containers: [{ name: 'c', image: 'nginx:1.27' }] },
  });
  const policyAnnex = (extra: object = {}) =>
    startTestAnnex({
      admission: { names: { enabled: false }, defaults: { enabled: false }, ...extra },
      metrics: { enabled: false },
      policy: { enabled: true, native: false, events: true, instance: 'annex-callers' },
    } as any).then((t) => (started.push(t), t));

  /** What the API server lists: decisions (uid → user and object) and annex's Events. */
  const decisions = async () =>
    JSON.parse(await kubectlOk(['get', 'admissionevents', '-n', ns, '-o', 'json'])).items as any[];
  const events = async () =>
    (await apiRequest('GET', `/apis/events.k8s.io/v1/namespaces/${ns}/events`))
      .json()
      .items.filter((e: any) => e.reportingController === 'annex.dev/policy') as any[];
  /** Each Event by name, with how often it was seen: a forged decision would add or count one. */
  const eventCounts = (list: any[]) =>
    Object.fromEntries(list.map((e) => [e.metadata.name, e.series?.count ?? 1]));
  /** The admission-callers line of /readyz?verbose, once annex is ready (its policies listed). */
  const readyz = async (t: TestAnnex) => {
    const r = await eventually(async () => {
      const x = await annexGet(t, '/readyz?verbose');
      return x.status === 200 ? x : undefined;
    }, 15_000);
    expect(r.body).toMatch(/readyz check passed\n$/);
    return r.body.split('\n').find((l) => l.startsWith('[+]admission-callers '));
  };

  /** A review as a Pod in the cluster could send it: any userInfo, any object. */
  const forged = (uid: string, object: any, kind: object, resource: object) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind,
      resource,
      namespace: ns,
      name: object.metadata.name,
      operation: 'CREATE',
      userInfo: { username: 'mallory', groups: ['system:masters', 'system:authenticated'] },
      object,
      dryRun: false,
    },
  });
  const forgedDeny = (uid: string) =>
    forged(
      uid,
      deployment('forged.deny'),
      { group: 'apps', version: 'v1', kind: 'Deployment' },
      { group: 'apps', version: 'v1', resource: 'deployments' },
    );
  const forgedAudit = (uid: string) =>
    forged(
      uid,
      hostNetworkPod('forged-audit'),
      { group: '', version: 'v1', kind: 'Pod' },
      { group: '', version: 'v1', resource: 'pods' },
    );
  /** POST straight to annex's port, as `id` (cert, key files) or with no certificate. */
  const post = async (t: TestAnnex, path: string, body: unknown, id?: [string, string]) => {
    const r = await annexPost(t, path, body, id);
    return { status: r.status, json: JSON.parse(r.body) };
  };
  // A certificate from another CA: the cluster's client CA (kubectl's admin), not the webhook one.
  const otherCa: [string, string] = [join(c.dir, 'admin.crt'), join(c.dir, 'admin.key')];
  const apiServerCert: [string, string] = [
    join(c.dir, 'webhook-client.crt'),
    join(c.dir, 'webhook-client.key'),
  ];

  /** Registers `t`'s policy webhooks and audit.annex.dev, and waits until the Deny policy bites. */
  const register = async (t: TestAnnex) => {
    registered = featureRegistrations(t, 'policy', {
      webhooks: ['policies.annex.dev'],
      namespace: ns,
    });
    await applyObjects(registered);
    await waitForCondition(['apiservice/v1alpha1.audit.annex.dev'], 'Available');
    await eventually(async () => {
      const r = await apiRequest('POST', `/apis/apps/v1/namespaces/${ns}/deployments?dryRun=All`, {
        body: deployment('probe.dots'),
      });
      return r.status === 422 ? true : undefined;
    }, 30_000);
  };

  beforeAll(async () => {
    ns = await createNamespace('callers');
    await installPolicyCrd();
    // admission.clientCA: the test harness's default, the API server's webhook client CA.
    a = await policyAnnex();
    await ensureAnnexService();
    for (const [file, name] of [
      ['workload-names.yaml', 'callers-deny'],
      ['host-network.yaml', 'callers-audit'],
    ] as const) {
      expect((await apiRequest('POST', POLICIES, { body: policy(file, name) })).status).toBe(201);
    }
    await register(a);
  }, 180_000);

  afterAll(async () => {
    for (const name of policyNames)
      await kubectl(['delete', 'admissionpolicy', name, '--wait=false']);
    await deleteObjects(registered);
    await kubectl(['delete', 'namespace', ns, '--wait=false']);
    for (const t of started) await t.stop();
  });

  it("the API server's reviews are authenticated: decisions recorded, Events written, /readyz?verbose says so", async () => {
    const denied = await kubectl(['create', '-f', '-'], {
      input: JSON.stringify(deployment('web.front')),
    });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain('metadata.name: Invalid value: "web.front"');
    expect(
      (await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, { body: hostNetworkPod('net') }))
        .status,
    ).toBe(201);

    const got = await eventually(async () => {
      const d = await decisions();
      const names = d.map((x) => `${x.decision} ${x.object.name} ${x.user}`);
      return names.includes('Deny web.front annex-admin') && names.includes('Audit net annex-admin')
        ? d
        : undefined;
    }, 15_000);
    expect(got.every((x) => x.user === 'annex-admin')).toBe(true);
    const ev = await eventually(async () => {
      const list = await events();
      const seen = list.map((e) => `${e.action} ${e.regarding.kind}/${e.regarding.name}`);
      return seen.includes('Denied Namespace/' + ns) && seen.includes('Audited Pod/net')
        ? list
        : undefined;
    }, 15_000);
    expect(ev.length).toBeGreaterThanOrEqual(2);
    expect(await readyz(a)).toMatch(
      /^\[\+\]admission-callers ok: \d+ authenticated \(last \d+s ago\), 0 unauthenticated$/,
    );
  });

  it('a forged review (no certificate, or one from another CA) is answered, and changes neither admissionevents nor Events', async () => {
    const beforeDecisions = await decisions();
    const beforeEvents = eventCounts(await events());

    let n = 0;
    for (const id of [undefined, otherCa]) {
      const deny = await post(a, '/validate/policies.annex.dev', forgedDeny(`forged-${++n}`), id);
      expect(deny.status).toBe(200);
      expect(deny.json.response).toMatchObject({
        uid: `forged-${n}`,
        allowed: false,
        status: { code: 422, reason: 'Invalid' },
      });
      const audit = await post(a, '/validate/policies.annex.dev', forgedAudit(`forged-${++n}`), id);
      expect(audit.status).toBe(200);
      expect(audit.json.response).toMatchObject({ uid: `forged-${n}`, allowed: true });
    }
    expect(await readyz(a)).toMatch(
      /^\[\+\]admission-callers ok: \d+ authenticated \(last \d+s ago\), 4 unauthenticated \(last \d+s ago: x509: certificate signed by unknown authority\)$/,
    );

    const metrics = await annexGet(a, '/metrics', otherCa); // the cluster's admin, authorized
    expect(metrics.body).toContain(
      'annex_admission_reviews_total{webhook="policies",authenticated="false"} 4\n',
    );
    expect(metrics.body).toMatch(
      /\nannex_admission_reviews_total\{webhook="policies",authenticated="true"\} [1-9]/,
    );

    // The API server's next review is recorded: once it shows, a forged one would have too
    // (decisions are recorded as the review is decided, Events in order).
    expect(
      (
        await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, {
          body: hostNetworkPod('net-after'),
        })
      ).status,
    ).toBe(201);
    const after = await eventually(async () => {
      const d = await decisions();
      return d.some((x) => x.object.name === 'net-after') ? d : undefined;
    }, 15_000);
    const afterEvents = await eventually(async () => {
      const list = await events();
      return list.some((e) => e.regarding.name === 'net-after') ? list : undefined;
    }, 15_000);

    const names = (d: any[]) => d.map((x) => x.metadata.name).sort();
    expect(names(after)).toEqual(
      names([...beforeDecisions, ...after.filter((x) => x.object.name === 'net-after')]),
    );
    expect(JSON.stringify(after)).not.toMatch(/mallory|forged/);
    expect(JSON.stringify(afterEvents)).not.toMatch(/mallory|forged/);
    const counts = eventCounts(afterEvents.filter((e) => e.regarding.name !== 'net-after'));
    expect(counts).toEqual(beforeEvents);
  });

  it('without admission.clientCA even the API server is unauthenticated: nothing recorded, and /readyz?verbose says why', async () => {
    const b = await policyAnnex({ clientCA: '' });
    expect(await readyz(b)).toBe(
      '[+]admission-callers ok: admission.clientCA is not set; no AdmissionReview yet',
    );
    await register(b); // the webhooks and audit.annex.dev now reach b
    try {
      expect(
        (
          await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, {
            body: hostNetworkPod('net-b'),
          })
        ).status,
      ).toBe(201);
      expect(await readyz(b)).toMatch(
        /^\[\+\]admission-callers ok: admission.clientCA is not set; 0 authenticated, \d+ unauthenticated \(last \d+s ago\)$/,
      );
      // b answered (the Deny probe above, this create) and recorded nothing: its log is empty.
      expect(await decisions()).toEqual([]);
    } finally {
      await register(a);
    }
    await b.stop(); // its Event recorder drains before stop() returns
    expect(JSON.stringify(await events())).not.toContain('net-b');
  });

  it("admission.requireClientCert: the forger gets a 401 Status, the API server's certificate gets in", async () => {
    const s = await startTestAnnex({
      admission: { requireClientCert: true, defaults: { enabled: false } },
      metrics: { enabled: false },
    } as any);
    started.push(s);
    const review = forgedDeny('strict');
    for (const id of [undefined, otherCa]) {
      const r = await post(s, '/validate/names.annex.dev', review, id);
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    }
    const ok = await post(s, '/validate/names.annex.dev', review, apiServerCert);
    expect(ok.status).toBe(200);
    expect(ok.json.response).toMatchObject({ uid: 'strict', allowed: false });
    expect(await readyz(s)).toMatch(
      /^\[\+\]admission-callers ok: 1 authenticated \(last \d+s ago\), 2 unauthenticated \(last \d+s ago: x509: certificate signed by unknown authority\)$/,
    );
  });
});
