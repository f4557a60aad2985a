// annex's metrics group served by the real kube-apiserver's aggregation layer: the
// APIService from the repo's YAML, kubectl on every path, and numbers that flow from test
// kubelets (real HTTPS servers the Node objects point at) through annex's scraper.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import {
  applyObjects,
  deleteObjects,
  pointAtTestAnnex,
  registerApiServices,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
} from '../cluster/harness.js';
import type { Config } from '../../src/config/load.js';
import { REVIEW_FAILED_REASON } from '../../src/apiserver/auth/authorize.js';
import { nodeMetricsSchema, podMetricsSchema } from '../../src/metrics/schema.js';
import {
  eventually,
  startFakeMetricsCluster,
  type FakeMetricsCluster,
  type FakePod,
  type TestKubelet,
} from '../cluster/kubelet.js';

const GROUP = 'metrics.annex.dev';
const GV = `/apis/${GROUP}/v1beta1`;
const INTERVAL_S = 2;
const Mi = 1024 * 1024;
const Gi = 1024 * Mi;

const ajv = new Ajv({ allErrors: true });
const validNode = ajv.compile(nodeMetricsSchema);
const validPod = ajv.compile(podMetricsSchema);

/** kube's canonical text for the test's rates (multiples of 125m) and sizes (Mi or Gi). */
const cpuText = (cores: number) => `${Math.round(cores * 1000)}m`;
const memText = (bytes: number) => (bytes % Gi === 0 ? `${bytes / Gi}Gi` : `${bytes / Mi}Mi`);

describeCluster('aggregated API through the real kube-apiserver', (c) => {
  let annex: TestAnnex;
  let apiservices: any[] = [];
  let fake: FakeMetricsCluster;
  let kubelet0: TestKubelet;
  const nodes: string[] = [];
  let nsWeb: string;
  let nsDb: string;
  let pods: FakePod[];
  const tmp = mkdtempSync(join(tmpdir(), 'annex-agg-e2e-'));
  // A private discovery cache: another file's APIServices never leak into ours.
  const cache = ['--cache-dir', join(tmp, 'kube-cache')];
  const k = (args: string[], opts?: Parameters<typeof kubectl>[1]) =>
    kubectl([...cache, ...args], opts);
  const kOk = (args: string[], opts?: Parameters<typeof kubectlOk>[1]) =>
    kubectlOk([...cache, ...args], opts);
  const raw = async (path: string) => JSON.parse(await kOk(['get', '--raw', path]));

  beforeAll(async () => {
    const suffix = Math.random().toString(16).slice(2, 6);
    nsWeb = await createNamespace('web');
    nsDb = await createNamespace('db');
    const web = (i: number): FakePod => ({
      namespace: nsWeb,
      name: `web-${i}`,
      labels: { app: 'web' },
      containers: [
        { name: 'nginx', cpu: 0.125, memory: 64 * Mi },
        { name: 'log-shipper', cpu: 0.125, memory: 16 * Mi },
      ],
    });
    const db = (i: number): FakePod => ({
      namespace: nsDb,
      name: `db-${i}`,
      labels: { app: 'db' },
      containers: [{ name: 'postgres', cpu: 0.375, memory: 256 * Mi }],
    });
    const cacheP = (i: number): FakePod => ({
      namespace: nsDb,
      name: `cache-${i}`,
      labels: { app: 'cache' },
      containers: [{ name: 'redis', cpu: 0.125, memory: 32 * Mi }],
    });
    const onA = [web(0), web(1), web(2)];
    const onB = [db(0), db(1), cacheP(0), cacheP(1), cacheP(2)];
    pods = [...onA, ...onB];
    nodes.push(`annex-e2e-a-${suffix}`, `annex-e2e-b-${suffix}`);
    const allocatable = { cpu: '4', memory: '8Gi' };
    fake = await startFakeMetricsCluster(
      [
        { name: nodes[0]!, usage: { cpu: 0.5, memory: 2 * Gi }, allocatable, pods: onA },
        { name: nodes[1]!, usage: { cpu: 0.25, memory: Gi }, allocatable, pods: onB },
      ],
      INTERVAL_S * 1000,
    );
    kubelet0 = fake.kubelets.get(nodes[0]!)!;

    annex = await startTestAnnex({
      metrics: {
        source: 'kubelet',
        scrapeIntervalSeconds: INTERVAL_S,
        // ConfigOverrides is shallow; the schema fills in the other kubelet defaults.
        kubelet: { caFile: fake.caFile, timeoutSeconds: 1.5 } as Config['metrics']['kubelet'],
      },
    });
    apiservices = await registerApiServices('apiservice/metrics-annex-dev/apiservice.yaml', annex);
    // Two scrapes make the first rate: wait until every node and pod is served.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const n = (await raw(`${GV}/nodes`)).items.length;
      const p = (await raw(`${GV}/pods`)).items.length;
      if ((n >= 2 && p >= pods.length) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
  });

  afterAll(async () => {
    if (apiservices.length) await deleteObjects(apiservices);
    await annex?.stop();
    await fake?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** A raw request through the API server, for the status code and the Status body. */
  const through = (path: string, opts: Parameters<typeof apiRequest>[2] = {}) =>
    apiRequest(opts.body === undefined ? 'GET' : 'POST', path, opts);
  const ours = (items: any[]) => items.filter((i) => nodes.includes(i.metadata.name));
  const inOurNamespaces = (items: any[]) =>
    items.filter((i) => [nsWeb, nsDb].includes(i.metadata.namespace));
  const names = (items: any[]) => items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`);
  const cols = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));
  const usageOf = (p: FakePod) =>
    p.containers
      .map((c) => ({ name: c.name, usage: { cpu: cpuText(c.cpu), memory: memText(c.memory) } }))
      .sort((a, b) => (a.name < b.name ? -1 : 1));

  it('registers the APIService from the repo YAML; the availability probe passes', async () => {
    const svc = JSON.parse(
      await kOk(['get', 'apiservice', 'v1beta1.metrics.annex.dev', '-o=json']),
    );
    expect(svc.spec.service).toEqual({
      namespace: 'annex-system',
      name: 'annex',
      port: annex.port,
    });
    expect(svc.status.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Available',
        status: 'True',
        reason: 'Passed',
        message: 'all checks passed',
      }),
    );
  });

  it('discovery: the group/version from annex, the group and /apis from the aggregator', async () => {
    expect(await raw(GV)).toEqual({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: `${GROUP}/v1beta1`,
      resources: [
        {
          name: 'nodes',
          singularName: 'nodemetrics',
          namespaced: false,
          kind: 'NodeMetrics',
          verbs: ['get', 'list', 'watch'],
        },
        {
          name: 'pods',
          singularName: 'podmetrics',
          namespaced: true,
          kind: 'PodMetrics',
          verbs: ['get', 'list', 'watch'],
        },
      ],
    });
    const version = { groupVersion: `${GROUP}/v1beta1`, version: 'v1beta1' };
    expect(await raw(`/apis/${GROUP}`)).toEqual({
      kind: 'APIGroup',
      apiVersion: 'v1',
      name: GROUP,
      versions: [version],
      preferredVersion: version,
    });
    const list = await raw('/apis');
    expect(list.groups).toContainEqual({
      name: GROUP,
      versions: [version],
      preferredVersion: version,
    });
    // Aggregated discovery (v2): the aggregator fetched annex's document (or fell back).
    const accept = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';
    const v2 = await eventually(async () => {
      const r = await through('/apis', { headers: { accept } });
      const g = r.json().items.find((i: any) => i.metadata.name === GROUP);
      return g?.versions?.[0]?.resources?.length ? g : undefined;
    });
    expect(v2.versions).toEqual([
      {
        version: 'v1beta1',
        freshness: 'Current',
        resources: [
          expect.objectContaining({
            resource: 'nodes',
            responseKind: { group: GROUP, version: 'v1beta1', kind: 'NodeMetrics' },
            scope: 'Cluster',
            singularResource: 'nodemetrics',
            verbs: ['get', 'list', 'watch'],
          }),
          expect.objectContaining({
            resource: 'pods',
            responseKind: { group: GROUP, version: 'v1beta1', kind: 'PodMetrics' },
            scope: 'Namespaced',
            singularResource: 'podmetrics',
            verbs: ['get', 'list', 'watch'],
          }),
        ],
      },
    ]);
  });

  it('kubectl api-resources shows both resources', async () => {
    expect(cols(await kOk(['api-resources', `--api-group=${GROUP}`]))).toEqual([
      ['NAME', 'SHORTNAMES', 'APIVERSION', 'NAMESPACED', 'KIND'],
      ['nodes', `${GROUP}/v1beta1`, 'false', 'NodeMetrics'],
      ['pods', `${GROUP}/v1beta1`, 'true', 'PodMetrics'],
    ]);
  });

  it('lists and gets NodeMetrics with the numbers the kubelets report', async () => {
    const list = await raw(`${GV}/nodes`);
    expect(list).toMatchObject({ kind: 'NodeMetricsList', apiVersion: `${GROUP}/v1beta1` });
    expect(list.metadata.resourceVersion).toMatch(/^\d+$/);
    const got = ours(list.items);
    expect(got.map((n: any) => [n.metadata.name, n.usage, n.window])).toEqual([
      [nodes[0], { cpu: '500m', memory: '2Gi' }, '2s'],
      [nodes[1], { cpu: '250m', memory: '1Gi' }, '2s'],
    ]);
    for (const n of got) {
      expect(validNode(n), JSON.stringify(validNode.errors)).toBe(true);
      expect(n.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const one = await raw(`${GV}/nodes/${nodes[1]}`);
    expect(one).toMatchObject({
      kind: 'NodeMetrics',
      apiVersion: `${GROUP}/v1beta1`,
      metadata: { name: nodes[1] },
      usage: { cpu: '250m', memory: '1Gi' },
      window: '2s',
    });
  });

  it('lists PodMetrics in all namespaces and in one, and gets one, with their labels', async () => {
    const all = inOurNamespaces((await raw(`${GV}/pods`)).items);
    expect(all).toHaveLength(pods.length);
    for (const p of pods) {
      const m = all.find(
        (i: any) => i.metadata.namespace === p.namespace && i.metadata.name === p.name,
      );
      expect(m?.containers, `${p.namespace}/${p.name}`).toEqual(usageOf(p));
      expect(m?.window).toBe('2s');
      expect(validPod(m), JSON.stringify(validPod.errors)).toBe(true);
    }
    const web = await raw(`${GV}/namespaces/${nsWeb}/pods`);
    expect(names(web.items)).toEqual([`${nsWeb}/web-0`, `${nsWeb}/web-1`, `${nsWeb}/web-2`]);
    const db0 = await raw(`${GV}/namespaces/${nsDb}/pods/db-0`);
    expect(db0).toMatchObject({
      kind: 'PodMetrics',
      metadata: { name: 'db-0', namespace: nsDb, labels: { app: 'db' } },
      containers: [{ name: 'postgres', usage: { cpu: '375m', memory: '256Mi' } }],
    });
  });

  it('label and field selectors select as the API server does', async () => {
    const sel = async (q: string) => names(inOurNamespaces((await raw(`${GV}/pods?${q}`)).items));
    expect(await sel(`labelSelector=${encodeURIComponent('app in (db,cache)')}`)).toEqual([
      `${nsDb}/cache-0`,
      `${nsDb}/cache-1`,
      `${nsDb}/cache-2`,
      `${nsDb}/db-0`,
      `${nsDb}/db-1`,
    ]);
    expect(await sel(`labelSelector=${encodeURIComponent('app!=web,app notin (cache)')}`)).toEqual([
      `${nsDb}/db-0`,
      `${nsDb}/db-1`,
    ]);
    expect(await sel(`labelSelector=${encodeURIComponent('!app')}`)).toEqual([]);
    expect(await sel(`fieldSelector=${encodeURIComponent('metadata.name=db-1')}`)).toEqual([
      `${nsDb}/db-1`,
    ]);
    expect(await sel(`fieldSelector=${encodeURIComponent(`metadata.namespace!=${nsDb}`)}`)).toEqual(
      [`${nsWeb}/web-0`, `${nsWeb}/web-1`, `${nsWeb}/web-2`],
    );
    const out = await kOk(['get', 'podmetrics', '-A', '-l', 'app=web', '-o', 'name']);
    expect(out.trim().split('\n')).toEqual([
      `podmetrics.${GROUP}/web-0`,
      `podmetrics.${GROUP}/web-1`,
      `podmetrics.${GROUP}/web-2`,
    ]);
  });

  it('a bad selector is a 400 with the message kube-apiserver gives for its own pods', async () => {
    for (const q of [
      `labelSelector=${encodeURIComponent('app in (web')}`,
      `labelSelector=${encodeURIComponent('a b')}`,
      `fieldSelector=${encodeURIComponent('metadata.name')}`,
      `fieldSelector=${encodeURIComponent('spec.nope=x')}`,
    ]) {
      const ours400 = await through(`${GV}/pods?${q}`);
      const kube400 = await through(`/api/v1/pods?${q}`);
      expect(kube400.status, q).toBe(400);
      expect(ours400.status, q).toBe(400);
      expect(ours400.headers['content-type']).toBe(kube400.headers['content-type']);
      expect(ours400.json(), q).toMatchObject({
        kind: 'Status',
        status: 'Failure',
        reason: 'BadRequest',
        code: 400,
        message: kube400.json().message,
      });
    }
  });

  it('404 for an unknown name and 405 for writes, as Status objects', async () => {
    const missing = await k(['get', 'nodemetrics', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe(
      `Error from server (NotFound): nodes.${GROUP} "nope" not found`,
    );
    const r404 = await through(`${GV}/namespaces/${nsWeb}/pods/nope`);
    expect(r404.status).toBe(404);
    expect(r404.json()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `pods.${GROUP} "nope" not found`,
      reason: 'NotFound',
      details: { name: 'nope', group: GROUP, kind: 'pods' },
      code: 404,
    });
    const del = await k(['delete', 'nodemetrics', nodes[0]!]);
    expect(del.code).toBe(1);
    expect(del.stderr.trim()).toBe(
      'Error from server (MethodNotAllowed): the server does not allow this method on the requested resource',
    );
    const post = await through(`${GV}/namespaces/${nsWeb}/pods`, {
      body: { apiVersion: `${GROUP}/v1beta1`, kind: 'PodMetrics', metadata: { name: 'x' } },
    });
    expect(post.status).toBe(405);
    expect(post.json()).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed', code: 405 });
    // Still there: nothing was deleted.
    expect((await raw(`${GV}/nodes/${nodes[0]}`)).metadata.name).toBe(nodes[0]);
  });

  it('OpenAPI v3 and v2 of the group, through the aggregator', async () => {
    const index = await eventually(async () => {
      const r = await raw('/openapi/v3');
      return r.paths[`apis/${GROUP}/v1beta1`] ? r : undefined;
    });
    const url: string = index.paths[`apis/${GROUP}/v1beta1`].serverRelativeURL;
    expect(url).toMatch(new RegExp(`^/openapi/v3/apis/${GROUP}/v1beta1\\?hash=[0-9A-F]+$`));
    const v3 = await raw(url);
    const KINDS = ['NodeMetrics', 'NodeMetricsList', 'PodMetrics', 'PodMetricsList'];
    const kinds = (schemas: Record<string, any>) =>
      Object.values(schemas)
        .flatMap((s) => s['x-kubernetes-group-version-kind'] ?? [])
        .filter((g: any) => g.group === GROUP)
        .map((g: any) => g.kind)
        .sort();
    expect(kinds(v3.components.schemas)).toEqual(KINDS);
    expect(Object.keys(v3.paths)).toContain(`/apis/${GROUP}/v1beta1/nodes`);
    const v2 = await eventually(async () => {
      const doc = (await through('/openapi/v2')).json();
      return kinds(doc.definitions).length ? doc : undefined;
    });
    expect(kinds(v2.definitions)).toEqual(KINDS);
  });

  it('kubectl get prints the server Table columns; pod rows sum their containers', async () => {
    const nodeRows = cols(await kOk(['get', 'nodemetrics']));
    expect(nodeRows[0]).toEqual(['NAME', 'CPU', 'MEMORY', 'WINDOW']);
    expect(nodeRows.filter((r) => nodes.includes(r[0]!))).toEqual([
      [nodes[0], '500m', '2048Mi', '2s'],
      [nodes[1], '250m', '1024Mi', '2s'],
    ]);
    expect(cols(await kOk(['get', 'podmetrics', '-n', nsWeb]))).toEqual([
      ['NAME', 'CPU', 'MEMORY', 'WINDOW'],
      ['web-0', '250m', '80Mi', '2s'],
      ['web-1', '250m', '80Mi', '2s'],
      ['web-2', '250m', '80Mi', '2s'],
    ]);
    const table = (
      await through(`${GV}/nodes`, {
        headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
      })
    ).json();
    expect(table.columnDefinitions.map((d: any) => [d.name, d.format])).toEqual([
      ['Name', 'name'],
      ['cpu', 'quantity'],
      ['memory', 'quantity'],
      ['Window', 'duration'],
    ]);
  });

  it('kubectl explain prints the schema', async () => {
    const kind = await kOk(['explain', 'nodemetrics']);
    expect(kind).toContain(`GROUP:      ${GROUP}`);
    expect(kind).toContain('KIND:       NodeMetrics');
    expect(kind).toContain('VERSION:    v1beta1');
    for (const f of ['timestamp\t<string> -required-', 'usage\t<map[string]string> -required-'])
      expect(kind).toContain(f);
    const field = await kOk(['explain', 'nodemetrics.usage']);
    expect(field).toContain('FIELD: usage <map[string]string>');
    expect(field).toMatch(/cpu\t<string> -required-\n\s+Average CPU usage/);
    const pod = await kOk(['explain', 'podmetrics.containers']);
    expect(pod).toContain('FIELD: containers <[]Object>');
  });

  it('paging: --chunk-size=3 walks all pods, three items a request', async () => {
    const r = await k(['get', 'podmetrics', '-A', '--chunk-size=3', '-v=6']);
    expect(r.code).toBe(0);
    const requests = r.stderr.split('\n').filter((l) => l.includes(`${GV}/pods?`));
    expect(requests).toHaveLength(3);
    expect(requests.every((l) => l.includes('limit=3') && l.includes('status="200 OK"'))).toBe(
      true,
    );
    expect(requests.filter((l) => l.includes('continue='))).toHaveLength(2);
    const rows = cols(r.stdout);
    expect(rows[0]).toEqual(['NAMESPACE', 'NAME', 'CPU', 'MEMORY', 'WINDOW']);
    expect(rows.slice(1).map((row) => `${row[0]}/${row[1]}`)).toEqual(
      [...pods].map((p) => `${p.namespace}/${p.name}`).sort(),
    );
  });

  it('kubectl get -w streams a change', async () => {
    const seen: string[] = [];
    const child = spawn(
      c.kubectl,
      ['--kubeconfig', c.adminKubeconfig, ...cache, 'get', 'nodemetrics', nodes[0]!, '-w'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const lineWith = (re: RegExp, timeoutMs: number) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no line ${re} in ${JSON.stringify(seen)}`)),
          timeoutMs,
        );
        const check = () => {
          const hit = seen.find((l) => re.test(l));
          if (hit) {
            clearTimeout(timer);
            child.stdout.off('data', check);
            resolve(hit);
          }
        };
        child.stdout.on('data', check);
        check();
      });
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      buf += d;
      const lines = buf.split('\n');
      buf = lines.pop()!;
      seen.push(...lines);
    });
    try {
      await lineWith(new RegExp(`^${nodes[0]}\\s+500m\\s+2048Mi\\s+2s$`), 15_000);
      kubelet0.setNode({ cpu: 0.5, memory: 3 * Gi });
      await lineWith(new RegExp(`^${nodes[0]}\\s+500m\\s+3072Mi\\s+2s$`), 15_000);
      expect(seen[0]).toMatch(/^NAME\s+CPU\s+MEMORY\s+WINDOW$/);
    } finally {
      child.kill();
      kubelet0.setNode({ cpu: 0.5, memory: 2 * Gi });
    }
  });

  it('the aggregator proxies to annex over HTTP/2', async () => {
    const versions = new Set<string>();
    const onRequest = (req: { httpVersion: string; url?: string }) => {
      if (req.url?.startsWith(`${GV}/nodes`)) versions.add(req.httpVersion);
    };
    annex.annex.listening.server.on('request', onRequest);
    try {
      await raw(`${GV}/nodes`);
    } finally {
      annex.annex.listening.server.off('request', onRequest);
    }
    expect([...versions]).toEqual(['2.0']);
  });

  it('401 to forged X-Remote-* headers sent to annex without the front-proxy certificate', async () => {
    const r = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(
        `https://127.0.0.1:${annex.port}${GV}/nodes`,
        {
          ca: readFileSync(join(annex.certsDir, 'ca.crt')),
          servername: 'annex.annex-system.svc',
          agent: false,
          headers: { 'X-Remote-User': 'system:admin', 'X-Remote-Group': 'system:masters' },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(r).toEqual({
      status: 401,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: 'Unauthorized',
        reason: 'Unauthorized',
        code: 401,
      },
    });
  });

  /** A kubeconfig for a ServiceAccount token (kubectl create token). */
  async function saKubeconfig(ns: string, sa: string): Promise<{ kubeconfig: string }> {
    const token = (await kOk(['create', 'token', sa, '-n', ns, '--duration=1h'])).trim();
    const kubeconfig = join(tmp, `${ns}-${sa}.kubeconfig`);
    writeFileSync(
      kubeconfig,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': sa,
        contexts: [{ name: sa, context: { cluster: 'test', user: sa } }],
        clusters: [
          { name: 'test', cluster: { server: c.server, 'certificate-authority': c.servingCaFile } },
        ],
        users: [{ name: sa, user: { token } }],
      }),
    );
    return { kubeconfig };
  }

  const forbiddenFor = (ns: string) =>
    `Error from server (Forbidden): pods.${GROUP} is forbidden: User "system:serviceaccount:${ns}:default" cannot list resource "pods" in API group "${GROUP}" in the namespace "${ns}"`;

  it('a ServiceAccount token without RBAC: 403 naming the SA and the resource; with a Role, it reads', async () => {
    const sa = await saKubeconfig(nsWeb, 'default');
    const denied = await k(['get', 'podmetrics', '-n', nsWeb], { as: sa });
    expect(denied.code).toBe(1);
    expect(denied.stderr.trim()).toBe(forbiddenFor(nsWeb));

    await kOk([
      'create',
      'role',
      'podmetrics-reader',
      '-n',
      nsWeb,
      '--verb=get,list',
      `--resource=pods.${GROUP}`,
    ]);
    await kOk([
      'create',
      'rolebinding',
      'podmetrics-reader',
      '-n',
      nsWeb,
      '--role=podmetrics-reader',
      `--serviceaccount=${nsWeb}:default`,
    ]);
    // The SA's identity reaches annex through the front proxy; annex's own review allows it.
    const rows = await eventually(async () => {
      const r = await k(['get', 'podmetrics', '-n', nsWeb], { as: sa });
      return r.code === 0 ? cols(r.stdout) : undefined;
    });
    expect(rows.map((r) => r[0])).toEqual(['NAME', 'web-0', 'web-1', 'web-2']);
  });

  it('annex answers 500 through the aggregator when its own SubjectAccessReview cannot be made', async () => {
    // A second annex whose identity may read the front-proxy trust but not create
    // SubjectAccessReviews: the API server lets the (RBAC-allowed) SA through, annex refuses.
    await kOk(['create', 'serviceaccount', 'annex-noreview', '-n', nsWeb]);
    const rb = `annex-noreview-${nsWeb}`;
    await kOk([
      'create',
      'rolebinding',
      rb,
      '-n',
      'kube-system',
      '--role=extension-apiserver-authentication-reader',
      `--serviceaccount=${nsWeb}:annex-noreview`,
    ]);
    const identity = await saKubeconfig(nsWeb, 'annex-noreview');
    const second = await startTestAnnex({
      kube: { kubeconfig: identity.kubeconfig },
      metrics: { source: 'local', scrapeIntervalSeconds: 1 },
    });
    try {
      await applyObjects(
        pointAtTestAnnex(
          repoManifest('apiservice/metrics-annex-dev/apiservice.yaml'),
          second.port,
          second.caBundle,
        ),
      );
      // The probe and admin (system:masters) need no review: wait until the second one serves.
      await eventually(async () => {
        const r = await k(['get', '--raw', `${GV}/nodes`]);
        return r.code === 0 &&
          JSON.parse(r.stdout).items.some((n: any) => n.metadata.name === hostname())
          ? true
          : undefined;
      });
      const sa = await saKubeconfig(nsWeb, 'default');
      const r = await k(['get', 'podmetrics', '-n', nsWeb], { as: sa });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe(
        `Error from server (InternalError): Internal error occurred: ${REVIEW_FAILED_REASON}`,
      );
    } finally {
      await applyObjects(apiservices);
      await second.stop();
      await kubectl(['delete', 'rolebinding', rb, '-n', 'kube-system', '--ignore-not-found']);
    }
    await eventually(async () =>
      (await raw(`${GV}/nodes`)).items.some((n: any) => n.metadata.name === nodes[0])
        ? true
        : undefined,
    );
  });
});
