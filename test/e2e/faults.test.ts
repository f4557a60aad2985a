// Dependency faults with the real control plane (issue 17 item 4). This file starts a
// control plane of its own (the shared one must never lose its API server) and one annex
// with delegated auth, the metrics group over test kubelets, and AdmissionPolicies; then it
// breaks each dependency in turn and measures how long annex takes to recover once the
// dependency is back. Figures go to stderr as `faults: …` lines.
import { readFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { opensslCa, opensslLeaf, CLIENT_EXT } from '../../src/devcluster/pki.js';
import { ControlPlane, type ClusterInfo } from '../../src/devcluster/control-plane.js';
import { waitForCondition } from '../../src/devcluster/wait.js';
import { lateness } from '../unit/lateness.js';
import * as wire from '../../src/devcluster/wire.js';
import { createLogger } from '../../src/log.js';
import type { Config } from '../../src/config/load.js';
import { startTestAnnex, type TestAnnex } from '../cluster/annex.js';
import { deploymentReview, directRequest, until, type DirectIdentity } from '../cluster/direct.js';
import { describeCluster, kubectl } from '../cluster/harness.js';
import {
  createNode,
  createRunningPod,
  GARBAGE_CANARY,
  kubeletCa,
  TestKubelet,
  type KubeletCa,
} from '../cluster/kubelet.js';

const GROUP = 'metrics.annex.dev';
const NODES = `/apis/${GROUP}/v1beta1/nodes`;
const NS = 'faults';
const INTERVAL_S = 2;
const SCRAPE_TIMEOUT_S = 1;
const WARN_SPEC = {
  match: { kinds: ['apps/Deployment'] },
  actions: ['Warn'],
  validate: [{ name: 'label', path: '$.metadata.labels.app', required: true }],
};
/** Denies unlabelled Deployments in namespaces labelled team=x: it needs namespace labels. */
const TEAM_SPEC = {
  match: { kinds: ['apps/Deployment'], namespaceSelector: { matchLabels: { team: 'x' } } },
  actions: ['Deny'],
  validate: [{ name: 'label', path: '$.metadata.labels.app', required: true }],
};

const report = (line: string) => console.error(`faults: ${line}`);

describeCluster('dependency faults (own control plane)', (shared) => {
  const cp = new ControlPlane(shared.binDir, shared.version);
  let c: ClusterInfo;
  let annex: TestAnnex;
  let ca: KubeletCa;
  const kubelets = new Map<string, TestKubelet>();
  let logText = '';
  const tokens: Record<string, string> = {};

  const k = async (args: string[], input?: string) => {
    const r = await kubectl(args, {
      as: { kubeconfig: c.adminKubeconfig },
      ...(input !== undefined ? { input } : {}),
    });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  const as = () => ({ kubeconfig: c.adminKubeconfig });
  const run: wire.Kubectl = (a, i) => k(a, i);

  /** A request straight to annex: a bearer token, or the front proxy's certificate + X-Remote-*. */
  const direct = (path: string, id: DirectIdentity, body?: unknown) =>
    directRequest(
      { port: annex.port, caFile: join(annex.certsDir, 'ca.crt') },
      path,
      id.proxy && !id.proxy.cert
        ? { ...id, proxy: { ...id.proxy, cert: [c.frontProxyClientCert, c.frontProxyClientKey] } }
        : id,
      body,
    );
  /** The policy webhook's answer to an unlabelled Deployment in `namespace`. */
  const admitDeployment = async (namespace: string) => {
    const r = await direct(
      '/validate/policies.annex.dev?timeout=5s',
      {},
      deploymentReview(namespace),
    );
    expect(r.status).toBe(200);
    return r.body.response;
  };
  const masters = { proxy: { user: 'faults-admin', groups: ['system:masters'] } };
  /** Node names annex serves (asked as system:masters: no SubjectAccessReview needed). */
  const servedNodes = async () => {
    const r = await direct(NODES, masters);
    if (r.status !== 200) throw new Error(`nodes: ${r.status}`);
    return (r.body.items as any[]).map((n) => n.metadata.name as string).sort();
  };
  const servedPods = async () => {
    const r = await direct(`/apis/${GROUP}/v1beta1/namespaces/${NS}/pods`, masters);
    if (r.status !== 200) throw new Error(`pods: ${r.status}`);
    return (r.body.items as any[]).map((p) => p.metadata.name as string).sort();
  };
  const linesWith = (s: string) => logText.split('\n').filter((l) => l.includes(s));

  async function addNode(name: string) {
    const kl = await TestKubelet.start({
      ca: ca.ca,
      node: { cpu: 0.25, memory: 64 << 20 },
      pods: [
        {
          namespace: NS,
          name: `${name}-pod`,
          containers: [{ name: 'c', cpu: 0.125, memory: 8 << 20 }],
        },
      ],
      stepMs: INTERVAL_S * 1000,
    });
    kubelets.set(name, kl);
    await createNode(name, kl.port, { cpu: '2', memory: '4Gi' }, as());
    await createRunningPod(
      {
        namespace: NS,
        name: `${name}-pod`,
        containers: [{ name: 'c', cpu: 0.125, memory: 8 << 20 }],
      },
      name,
      as(),
    );
  }

  beforeAll(async () => {
    const t0 = Date.now();
    c = await cp.start(() => {});
    await k(['create', 'namespace', NS]);
    for (const sa of ['default', 'cached', 'fresh'])
      await k(['create', 'serviceaccount', sa, '-n', NS]);
    await wire.applyObjects(run, [
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'faults-metrics' },
        rules: [{ apiGroups: [GROUP], resources: ['nodes', 'pods'], verbs: ['get', 'list'] }],
      },
    ]);
    await k([
      'create',
      'clusterrolebinding',
      'faults-metrics',
      '--clusterrole=faults-metrics',
      `--group=system:serviceaccounts:${NS}`,
      '--user=proxy-cached',
      '--user=proxy-fresh',
    ]);
    for (const sa of ['cached', 'fresh'])
      tokens[sa] = (await k(['create', 'token', sa, '-n', NS, '--duration=1h'])).trim();
    await wire.applyObjects(
      (a, i) => k(a, i),
      [
        ...wire.repoManifest('manifests/crds/admissionpolicies.yaml'),
        ...wire.repoManifest('manifests/crds/policyexceptions.yaml'),
      ],
    );
    ca = await kubeletCa();
    await addNode('node-a');
    await addNode('node-b');
    const logs = new PassThrough();
    logs.on('data', (d: Buffer) => (logText += d.toString()));
    annex = await startTestAnnex(
      {
        kube: { kubeconfig: c.adminKubeconfig },
        metrics: {
          source: 'kubelet',
          scrapeIntervalSeconds: INTERVAL_S,
          kubelet: {
            caFile: ca.caFile,
            timeoutSeconds: SCRAPE_TIMEOUT_S,
          } as Config['metrics']['kubelet'],
        },
        policy: { enabled: true, events: false, native: false } as Config['policy'],
        admission: { names: { enabled: false }, defaults: { enabled: false } } as never,
      },
      [],
      { log: createLogger('info', logs) },
    );
    await wire.ensureAnnexService(run);
    await wire.applyObjects(
      run,
      wire.pointAtLocalAnnex(
        wire.repoManifest('apiservice/metrics-annex-dev/apiservice.yaml'),
        annex.port,
        annex.caBundle,
      ),
    );
    await waitForCondition(run, [`apiservice/v1beta1.${GROUP}`], 'Available');
    await until('both nodes served', async () => (await servedNodes()).length === 2, 20_000);
    await k(['label', 'namespace', NS, 'team=x']);
    await policySeen('team-x', TEAM_SPEC);
    report(`setup ${Date.now() - t0} ms`);
  });

  // A failed test must not leave the next one without its control plane.
  afterEach(async () => {
    for (const name of ['etcd', 'kube-apiserver'] as const) await cp.resume(name).catch(() => {});
  });

  afterAll(async () => {
    await annex?.stop();
    for (const kl of kubelets.values()) await kl.close();
    ca?.remove();
    await cp.stop();
  });

  it('a kubelet that hangs, then answers garbage, leaves only its node and pods out, within the scrape bounds', async () => {
    const b = kubelets.get('node-b')!;
    expect(await servedPods()).toEqual(['node-a-pod', 'node-b-pod']);
    b.mode = 'hang';
    const late = lateness();
    const hung = await until(
      'node-b gone',
      async () => !(await servedNodes()).includes('node-b'),
      15_000,
    );
    late.stop();
    expect(await servedNodes()).toEqual(['node-a']);
    expect(await servedPods()).toEqual(['node-a-pod']);
    // One interval to the next tick and the scrape timeout, +2 s; annex's timers (it runs in
    // this process) running late on a busy machine aside.
    expect(hung - late.ms()).toBeLessThan((INTERVAL_S + SCRAPE_TIMEOUT_S + 2) * 1000);
    expect(linesWith('timeout to access kubelet').some((l) => l.includes('"node":"node-b"'))).toBe(
      true,
    );
    report(
      `kubelet hang: node-b left the list after ${hung} ms (bound: interval ${INTERVAL_S}s + timeout ${SCRAPE_TIMEOUT_S}s)`,
    );

    b.mode = 'garbage';
    await until(
      'garbage logged',
      async () => linesWith('failed parsing metrics').length > 0,
      10_000,
    );
    expect(await servedNodes()).toEqual(['node-a']);
    expect(linesWith('failed parsing metrics').every((l) => l.includes('"node":"node-b"'))).toBe(
      true,
    );
    expect(logText).not.toContain(GARBAGE_CANARY);

    b.mode = 'ok';
    const back = await until(
      'node-b back',
      async () => (await servedNodes()).includes('node-b'),
      15_000,
    );
    expect(await servedPods()).toEqual(['node-a-pod', 'node-b-pod']);
    report(`kubelet healthy again: node-b served after ${back} ms`);
    expect(await direct('/livez', {})).toMatchObject({ status: 200 });
  });

  /** The NodeMetrics timestamp annex serves for one node (it moves with every scrape). */
  const nodeTimestamp = async (name: string) => {
    const r = await direct(`${NODES}/${name}`, masters);
    return r.status === 200 ? String(r.body.timestamp) : '';
  };
  /** Retries a kubectl call until the API server takes it (it may answer 429 just after a start). */
  const kRetry = (args: string[], input?: string) =>
    until(`kubectl ${args[0]}`, () => k(args, input).then(() => true), 30_000);
  let probes = 0;
  /** Changes the authentication ConfigMap; resolves when annex's watch has delivered it. */
  async function configMapSeen(): Promise<void> {
    const seen = linesWith('authentication configuration changed').length;
    await kRetry([
      'patch',
      'configmap',
      'extension-apiserver-authentication',
      '-n',
      'kube-system',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { 'faults-probe': String(++probes) } }),
    ]);
    await until(
      'configmap change seen',
      async () => linesWith('authentication configuration changed').length > seen,
    );
  }
  /** Creates an AdmissionPolicy; resolves when annex's watch compiled it and wrote status.ready. */
  async function policySeen(name: string, spec: object = WARN_SPEC): Promise<void> {
    await kRetry(
      ['apply', '-f', '-'],
      JSON.stringify({
        apiVersion: 'policy.annex.dev/v1alpha1',
        kind: 'AdmissionPolicy',
        metadata: { name },
        spec,
      }),
    );
    await until('policy status written', async () => {
      const p = JSON.parse(await k(['get', 'admissionpolicy', name, '-o', 'json']));
      return p.status?.ready === true;
    });
  }
  /** Times each recovery signal from `t0` (the dependency back), all at once. */
  async function recoveries(t0: number, signals: Record<string, () => Promise<unknown>>) {
    const out: Record<string, number> = {};
    await Promise.all(
      Object.entries(signals).map(async ([name, f]) => {
        await f();
        out[name] = Date.now() - t0;
      }),
    );
    return out;
  }
  const throughAggregator = () =>
    until('aggregated read through kube-apiserver', async () => {
      const r = await kubectl(['get', '--raw', NODES], { as: as() });
      return r.code === 0;
    });

  it('kube-apiserver down: cached identities work within the TTL, others are refused; every watch recovers', async () => {
    const cachedProxy = { proxy: { user: 'proxy-cached' } };
    const freshProxy = { proxy: { user: 'proxy-fresh' } };
    // Prime the caches: a TokenReview and a SubjectAccessReview for one token, a SAR for one proxied user.
    expect((await direct(NODES, { token: tokens.cached! })).status).toBe(200);
    expect((await direct(NODES, cachedProxy)).status).toBe(200);
    const primed = Date.now();
    await cp.pause('kube-apiserver');
    const downAt = Date.now();

    expect((await direct(NODES, { token: tokens.cached! })).status).toBe(200);
    expect((await direct(NODES, cachedProxy)).status).toBe(200);
    expect(Date.now() - primed).toBeLessThan(10_000); // still within the 10 s TTL
    // Uncached: the token cannot be reviewed → 401 (k8s.io/apiserver's answer), never allowed.
    const t = await direct(NODES, { token: tokens.fresh! });
    expect(t.status).toBe(401);
    expect(t.body).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    // Authenticated but the SubjectAccessReview cannot be made → 500, as k8s.io/apiserver.
    const s = await direct(NODES, freshProxy);
    expect(s.status).toBe(500);
    expect(s.body).toMatchObject({ kind: 'Status', reason: 'InternalError', code: 500 });
    expect(s.body.message).toContain('SubjectAccessReview');
    // Admission decides from what the watches hold; a namespace they do not hold must be
    // read, and that read failing fails the review: failurePolicy Fail refuses the request.
    await until('team=x seen', async () => (await admitDeployment(NS)).allowed === false, 30_000);
    expect(await admitDeployment(NS)).toMatchObject({ allowed: false, status: { code: 422 } });
    const unknown = await admitDeployment('not-watched');
    expect(unknown).toMatchObject({
      allowed: false,
      status: { code: 500, reason: 'InternalError' },
    });
    expect(unknown.status.message).toBe(
      'annex webhook "policies.annex.dev" failed: KubeUnreachableError',
    );
    // Probes and webhooks need no API server: annex stays live and ready.
    expect((await direct('/livez', {})).status).toBe(200);
    expect((await direct('/readyz', {})).status).toBe(200);
    // The cached identity lasts its TTL, not the outage.
    const expired = await until(
      'cached token refused after its TTL',
      async () => (await direct(NODES, { token: tokens.cached! })).status === 401,
      15_000,
    );
    report(
      `kube-apiserver down: cached token refused ${Date.now() - primed} ms after priming (TTL 10 s)`,
    );
    expect(Date.now() - primed).toBeGreaterThanOrEqual(10_000);
    expect(expired).toBeGreaterThan(0);
    expect((await direct(NODES, cachedProxy)).status).toBe(500);

    await cp.resume('kube-apiserver');
    const upAt = Date.now();
    const times = await recoveries(upAt, {
      'TokenReview+SAR': () =>
        until(
          'fresh token',
          async () => (await direct(NODES, { token: tokens.fresh! })).status === 200,
        ),
      aggregator: throughAggregator,
      'configmap watch': configMapSeen,
      'policy watch': () => policySeen('after-apiserver'),
      'node list': async () => {
        await kRetry(['get', 'namespaces']);
        await addNode('node-c');
        await until('node-c served', async () => (await servedNodes()).includes('node-c'));
      },
    });
    report(
      `kube-apiserver down ${upAt - downAt} ms; after it was ready again: ${Object.entries(times)
        .map(([n, ms]) => `${n} ${ms} ms`)
        .join(', ')}`,
    );
    expect(Math.max(...Object.values(times))).toBeLessThan(30_000);
  });

  it('etcd down: annex stays live and ready, keeps scraping the nodes it knows, and its watches resume', async () => {
    await cp.pause('etcd');
    const downAt = Date.now();
    const before = await nodeTimestamp('node-a');
    // Metrics stay fresh: the kubelets are up, and the node list annex last read still holds.
    const fresh = await until(
      'node-a scraped with etcd down',
      async () => (await nodeTimestamp('node-a')) !== before,
      20_000,
    );
    expect((await direct('/livez', {})).status).toBe(200);
    expect((await direct('/readyz', {})).status).toBe(200);
    report(`etcd down: node-a re-scraped after ${fresh} ms`);

    await cp.resume('etcd');
    const upAt = Date.now();
    const times = await recoveries(upAt, {
      'configmap watch': configMapSeen,
      'policy watch': () => policySeen('after-etcd'),
      'node list': async () => {
        await addNode('node-d');
        await until('node-d served', async () => (await servedNodes()).includes('node-d'));
      },
    });
    report(
      `etcd down ${upAt - downAt} ms; after it was back: ${Object.entries(times)
        .map(([n, ms]) => `${n} ${ms} ms`)
        .join(', ')}`,
    );
    expect(Math.max(...Object.values(times))).toBeLessThan(30_000);
  });

  it('a new front-proxy CA is honoured without restarting annex; the old one is refused once the cluster drops it', async () => {
    const p = (f: string) => join(c.dir, f);
    copyFileSync(p('front-proxy-client.crt'), p('old-front-proxy-client.crt'));
    copyFileSync(p('front-proxy-client.key'), p('old-front-proxy-client.key'));
    const oldCa = readFileSync(p('front-proxy-ca.crt'), 'utf8');
    opensslCa(c.dir, 'front-proxy-ca', 'annex-test-front-proxy-ca-2');
    opensslLeaf(
      c.dir,
      'front-proxy-client',
      'front-proxy-ca',
      '/CN=front-proxy-client',
      CLIENT_EXT,
    );
    const newCa = readFileSync(p('front-proxy-ca.crt'), 'utf8');
    await cp.pause('kube-apiserver');
    await cp.resume('kube-apiserver');
    const upAt = Date.now();
    const aggregated = await throughAggregator();
    report(
      `front-proxy CA rotated: aggregated reads work ${aggregated} ms after kube-apiserver was ready`,
    );
    const bundle = async () =>
      JSON.parse(
        await k([
          'get',
          'configmap',
          'extension-apiserver-authentication',
          '-n',
          'kube-system',
          '-o',
          'json',
        ]),
      ).data['requestheader-client-ca-file'] as string;
    // kube-apiserver's trust controller publishes its CAs right after it starts.
    await until('new CA published', async () => (await bundle()).includes(newCa.trim()), 30_000);
    const published = await bundle();
    const oldCert: [string, string] = [
      p('old-front-proxy-client.crt'),
      p('old-front-proxy-client.key'),
    ];
    const asOld = { proxy: { ...masters.proxy, cert: oldCert } };
    // kube-apiserver keeps the CAs it published before (rolling restarts of HA control planes):
    // while the old CA is published, the old front-proxy certificate still authenticates.
    expect(published.includes(oldCa.trim())).toBe(true);
    expect((await direct(NODES, asOld)).status).toBe(200);
    // The operator drops the old CA: annex refuses it at once, without a restart.
    await k([
      'patch',
      'configmap',
      'extension-apiserver-authentication',
      '-n',
      'kube-system',
      '--type=merge',
      '-p',
      JSON.stringify({ data: { 'requestheader-client-ca-file': newCa } }),
    ]);
    const refused = await until('old front-proxy certificate refused', async () => {
      const r = await direct(NODES, asOld);
      return r.status === 401;
    });
    expect((await direct(NODES, masters)).status).toBe(200);
    expect(await throughAggregator()).toBeGreaterThanOrEqual(0);
    report(
      `old front-proxy CA dropped from the ConfigMap: refused after ${refused} ms; total ${Date.now() - upAt} ms`,
    );
  });
});
