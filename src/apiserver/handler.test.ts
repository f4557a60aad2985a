// The handler end to end over real HTTP on 127.0.0.1, with a test double of the provider.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import { statusErrors } from '../server/errors.js';
import { aggregatedApi, requestInfoMiddleware } from './handler.js';
import type { RequestInfo } from './request-info.js';
import { tooOldResourceVersion } from '../core/status.js';
import type { GroupVersionDecl, KubeObject, Provider, WatchEvent } from '../core/types.js';

class MemProvider implements Provider {
  rv = 100;
  objects = new Map<string, KubeObject>();
  history: { rv: number; ev: WatchEvent }[] = [];
  listeners = new Set<(e: WatchEvent, rv: string) => void>();
  put(o: KubeObject): void {
    const key = `${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    const type = this.objects.has(key) ? 'MODIFIED' : 'ADDED';
    this.rv++;
    this.objects.set(key, o);
    this.history.push({ rv: this.rv, ev: { type, object: o } });
    for (const l of this.listeners) l({ type, object: o }, String(this.rv));
  }
  snapshot() {
    return { resourceVersion: String(this.rv), items: [...this.objects.values()] };
  }
  subscribe(from: string, cb: (e: WatchEvent, rv: string) => void) {
    if (Number(from) < 50) throw tooOldResourceVersion(from, '50');
    for (const h of this.history) if (h.rv > Number(from)) cb(h.ev, String(h.rv));
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }
}

const nodes = new MemProvider();
const pods = new MemProvider();
const node = (name: string, cpu: string, labels: Record<string, string> = {}): KubeObject => ({
  metadata: { name, labels, creationTimestamp: '2026-01-01T00:00:00Z' },
  timestamp: '2026-01-01T00:00:00Z',
  window: '15s',
  usage: { cpu, memory: '1Mi' },
});
const pod = (ns: string, name: string): KubeObject => ({
  metadata: { name, namespace: ns, labels: { app: name.split('-')[0]! } },
  containers: [{ name: 'c', usage: { cpu: '1m', memory: '1Mi' } }],
  spec: { nodeName: 'n1' },
});

const columns = [
  { name: 'CPU', type: 'string' as const, description: 'cpu', jsonPath: '$.usage.cpu' },
  { name: 'Window', type: 'string' as const, description: 'window', jsonPath: '.window' },
];
const groups: GroupVersionDecl[] = [
  {
    group: 'metrics.annex.dev',
    versions: ['v1beta1', 'v1'],
    resources: [
      {
        kind: 'NodeMetrics',
        plural: 'nodes',
        singular: 'nodemetrics',
        namespaced: false,
        verbs: ['get', 'list', 'watch'],
        schema: { type: 'object' },
        columns,
        provider: nodes,
      },
      {
        kind: 'PodMetrics',
        plural: 'pods',
        singular: 'podmetrics',
        namespaced: true,
        verbs: ['get', 'list'],
        schema: { type: 'object' },
        columns: [],
        provider: pods,
        selectableFields: { 'spec.nodeName': '.spec.nodeName' },
      },
    ],
  },
];

let base = '';
let server: ReturnType<Koa['listen']>;
const seenInfo: RequestInfo[] = [];

beforeAll(async () => {
  for (const n of ['n3', 'n1', 'n2', 'n5', 'n4'])
    nodes.put(node(n, '10m', { zone: n === 'n1' ? 'a' : 'b' }));
  for (const [ns, n] of [
    ['b', 'web-1'],
    ['a', 'web-2'],
    ['a', 'db-1'],
    ['c', 'web-3'],
  ] as const)
    pods.put(pod(ns, n));
  const app = new Koa();
  app.silent = true;
  app.use(statusErrors(createLogger('silent')));
  app.use(requestInfoMiddleware());
  app.use(async (ctx, next) => {
    seenInfo.push(ctx.state.requestInfo as RequestInfo);
    await next();
  });
  app.use(
    aggregatedApi(groups, { bookmarkIntervalMs: 50, now: () => new Date('2026-01-01T00:01:00Z') }),
  );
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Res {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown>;
}

function call(method: string, path: string, headers: Record<string, string> = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += String(c)));
      res.on('end', () => {
        let json: Record<string, unknown> = {};
        try {
          json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        } catch {
          /* not JSON (watch streams) */
        }
        resolve({ status: res.statusCode!, headers: res.headers, text, json });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
const get = (path: string, headers?: Record<string, string>) => call('GET', path, headers);
const names = (r: Res) => (r.json.items as KubeObject[]).map((o) => o.metadata.name);

describe('discovery', () => {
  it('serves the APIResourceList (the availability probe) with no Accept header', async () => {
    const r = await get('/apis/metrics.annex.dev/v1beta1');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json.kind).toBe('APIResourceList');
    expect(
      (r.json.resources as { name: string; verbs: string[] }[]).map((x) => [x.name, x.verbs]),
    ).toEqual([
      ['nodes', ['get', 'list', 'watch']],
      ['pods', ['get', 'list']],
    ]);
  });

  it('serves /apis as APIGroupList, or aggregated v2 with its exact Content-Type, ETag and 304', async () => {
    const legacy = await get('/apis', { Accept: 'application/json' });
    expect(legacy.json.kind).toBe('APIGroupList');
    const accept =
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList';
    const v2 = await get('/apis', { Accept: accept });
    expect(v2.status).toBe(200);
    expect(v2.headers['content-type']).toBe(
      'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    );
    expect(v2.headers.vary).toBe('Accept');
    expect(v2.json).toMatchObject({
      kind: 'APIGroupDiscoveryList',
      apiVersion: 'apidiscovery.k8s.io/v2',
    });
    const etag = v2.headers.etag as string;
    const again = await get('/apis', { Accept: accept, 'If-None-Match': etag });
    expect(again.status).toBe(304);
    const bad = await get('/apis', {
      Accept: 'application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList',
    });
    expect(bad.status).toBe(406);
    expect(bad.json).toMatchObject({ kind: 'Status', reason: 'NotAcceptable', code: 406 });
  });

  it('serves /apis/<group> and 404s unknown groups and versions with a Status', async () => {
    expect((await get('/apis/metrics.annex.dev')).json.preferredVersion).toEqual({
      groupVersion: 'metrics.annex.dev/v1beta1',
      version: 'v1beta1',
    });
    for (const p of [
      '/apis/other.io',
      '/apis/metrics.annex.dev/v9',
      '/apis/metrics.annex.dev/v1beta1/widgets',
      '/openapi/v9',
    ]) {
      const r = await get(p);
      expect(r.status, p).toBe(404);
      expect(r.json).toMatchObject({
        kind: 'Status',
        reason: 'NotFound',
        message: 'the server could not find the requested resource',
      });
    }
  });

  it('serves OpenAPI v2, the v3 index and per-GV v3 documents (ETag, immutable with the hash)', async () => {
    const v2 = await get('/openapi/v2');
    expect(v2.json.swagger).toBe('2.0');
    const index = await get('/openapi/v3');
    const url = (index.json.paths as Record<string, { serverRelativeURL: string }>)[
      'apis/metrics.annex.dev/v1'
    ]!.serverRelativeURL;
    expect(url).toMatch(/^\/openapi\/v3\/apis\/metrics\.annex\.dev\/v1\?hash=[0-9A-F]+$/);
    const doc = await get(url);
    expect(doc.status).toBe(200);
    expect(doc.headers['cache-control']).toBe('public, immutable');
    expect(Object.keys((doc.json.components as { schemas: object }).schemas)).toContain(
      'dev.annex.metrics.v1.NodeMetrics',
    );
    expect((await get(url, { 'If-None-Match': doc.headers.etag as string })).status).toBe(304);
  });
});

describe('list and get', () => {
  it('lists sorted items with List kind, apiVersion and resourceVersion, under each version', async () => {
    const r = await get('/apis/metrics.annex.dev/v1/nodes');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      kind: 'NodeMetricsList',
      apiVersion: 'metrics.annex.dev/v1',
      metadata: { resourceVersion: String(nodes.rv) },
    });
    expect(names(r)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
    expect((r.json.items as KubeObject[])[0]).toMatchObject({
      apiVersion: 'metrics.annex.dev/v1',
      kind: 'NodeMetrics',
    });
  });

  it('lists namespaced resources across and within namespaces, items [] when none', async () => {
    expect(names(await get('/apis/metrics.annex.dev/v1beta1/pods'))).toEqual([
      'db-1',
      'web-2',
      'web-1',
      'web-3',
    ]);
    expect(names(await get('/apis/metrics.annex.dev/v1beta1/namespaces/a/pods'))).toEqual([
      'db-1',
      'web-2',
    ]);
    const empty = await get('/apis/metrics.annex.dev/v1beta1/namespaces/zzz/pods');
    expect(empty.text).toContain('"items":[]');
  });

  it('applies label and field selectors, and rejects bad ones with 400', async () => {
    expect(
      names(await get('/apis/metrics.annex.dev/v1beta1/nodes?labelSelector=zone%3Db')),
    ).toEqual(['n2', 'n3', 'n4', 'n5']);
    expect(
      names(await get('/apis/metrics.annex.dev/v1beta1/nodes?labelSelector=zone+notin+(b)')),
    ).toEqual(['n1']);
    expect(
      names(
        await get(
          '/apis/metrics.annex.dev/v1beta1/pods?fieldSelector=metadata.namespace%3Da,metadata.name!%3Dweb-2',
        ),
      ),
    ).toEqual(['db-1']);
    expect(
      names(
        await get(
          '/apis/metrics.annex.dev/v1beta1/pods?fieldSelector=spec.nodeName%3Dn1&labelSelector=app%3Dweb',
        ),
      ),
    ).toHaveLength(3);
    const badLabel = await get('/apis/metrics.annex.dev/v1beta1/nodes?labelSelector=zone+b');
    expect(badLabel.json).toMatchObject({
      code: 400,
      reason: 'BadRequest',
      message: "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    });
    const badField = await get(
      '/apis/metrics.annex.dev/v1beta1/nodes?fieldSelector=spec.nodeName%3Dx',
    );
    expect(badField.json).toMatchObject({
      code: 400,
      message: 'field label not supported: spec.nodeName',
    });
  });

  it('pages with limit/continue at one resourceVersion, with remainingItemCount', async () => {
    const p1 = await get('/apis/metrics.annex.dev/v1beta1/nodes?limit=2');
    const meta1 = p1.json.metadata as {
      resourceVersion: string;
      continue: string;
      remainingItemCount: number;
    };
    expect(names(p1)).toEqual(['n1', 'n2']);
    expect(meta1.remainingItemCount).toBe(3);
    nodes.put(node('n0', '1m')); // a change between pages must not show up
    const p2 = await get(
      `/apis/metrics.annex.dev/v1beta1/nodes?limit=2&continue=${meta1.continue}`,
    );
    const meta2 = p2.json.metadata as typeof meta1;
    expect(names(p2)).toEqual(['n3', 'n4']);
    expect(meta2.resourceVersion).toBe(meta1.resourceVersion);
    const p3 = await get(
      `/apis/metrics.annex.dev/v1beta1/nodes?limit=2&continue=${meta2.continue}`,
    );
    expect(names(p3)).toEqual(['n5']);
    expect((p3.json.metadata as typeof meta1).continue).toBeUndefined();
    expect((await get('/apis/metrics.annex.dev/v1beta1/nodes?continue=garbage!')).status).toBe(400);
  });

  it('gets one object, 404 with the NotFound message otherwise', async () => {
    const r = await get('/apis/metrics.annex.dev/v1beta1/namespaces/a/pods/web-2');
    expect(r.json).toMatchObject({
      kind: 'PodMetrics',
      apiVersion: 'metrics.annex.dev/v1beta1',
      metadata: { name: 'web-2', namespace: 'a' },
    });
    const missing = await get('/apis/metrics.annex.dev/v1beta1/nodes/nope');
    expect(missing.status).toBe(404);
    expect(missing.json).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'nodes.metrics.annex.dev "nope" not found',
      reason: 'NotFound',
      details: { name: 'nope', group: 'metrics.annex.dev', kind: 'nodes' },
      code: 404,
    });
    expect((await get('/apis/metrics.annex.dev/v1beta1/namespaces/b/pods/web-2')).status).toBe(404);
    expect((await get('/apis/metrics.annex.dev/v1beta1/namespaces/a/nodes')).status).toBe(404);
    expect((await get('/apis/metrics.annex.dev/v1beta1/nodes/n1/status')).status).toBe(404);
  });

  it('refuses writes with 405 and unsupported watch with the upstream message', async () => {
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      const r = await call(
        m,
        m === 'POST'
          ? '/apis/metrics.annex.dev/v1beta1/nodes'
          : '/apis/metrics.annex.dev/v1beta1/nodes/n1',
      );
      expect(r.status, m).toBe(405);
      expect(r.json).toMatchObject({ kind: 'Status', reason: 'MethodNotAllowed' });
    }
    const w = await get('/apis/metrics.annex.dev/v1beta1/pods?watch=true');
    expect(w.json).toMatchObject({
      code: 405,
      message: 'watch is not supported on resources of kind "pods.metrics.annex.dev"',
    });
  });

  it('answers Table for kubectl, with Name first and includeObject', async () => {
    const accept =
      'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
    const t = await get('/apis/metrics.annex.dev/v1beta1/nodes?limit=1', { Accept: accept });
    expect(t.headers['content-type']).toBe('application/json;as=Table;v=v1;g=meta.k8s.io');
    expect(t.json.kind).toBe('Table');
    expect((t.json.columnDefinitions as { name: string }[]).map((c) => c.name)).toEqual([
      'Name',
      'CPU',
      'Window',
    ]);
    const rows = t.json.rows as { cells: unknown[]; object: { kind: string } }[];
    expect(rows).toHaveLength(1);
    expect(rows[0]!.cells).toEqual(['n0', '1m', '15s']);
    expect(rows[0]!.object.kind).toBe('PartialObjectMetadata');
    expect((t.json.metadata as { continue?: string }).continue).toBeDefined();
    const one = await get('/apis/metrics.annex.dev/v1beta1/nodes/n1?includeObject=Object', {
      Accept: accept,
    });
    expect((one.json.rows as { object: { kind: string } }[])[0]!.object.kind).toBe('NodeMetrics');
    expect(
      (await get('/apis/metrics.annex.dev/v1beta1/nodes?includeObject=x', { Accept: accept }))
        .status,
    ).toBe(400);
    expect(
      (await get('/apis/metrics.annex.dev/v1beta1/nodes', { Accept: 'application/yaml' })).status,
    ).toBe(406);
  });

  it('puts the RequestInfo on ctx.state for middleware before the handler', async () => {
    seenInfo.length = 0;
    await get(
      '/apis/metrics.annex.dev/v1beta1/namespaces/a/pods?fieldSelector=metadata.name%3Dweb-2',
    );
    expect(seenInfo[0]).toMatchObject({
      isResourceRequest: true,
      verb: 'list',
      namespace: 'a',
      resource: 'pods',
      name: 'web-2',
    });
  });

  it('leaves paths outside /apis and /openapi to the next middleware', async () => {
    const r = await get('/metrics');
    expect(r.status).toBe(404);
    expect(r.json.message).toBe('the server could not find the requested resource');
  });
});

describe('watch over HTTP', () => {
  function openWatch(path: string, headers: Record<string, string> = {}) {
    const lines: Record<string, unknown>[] = [];
    let buf = '';
    let status = 0;
    let contentType = '';
    const waiters: (() => void)[] = [];
    const req = httpRequest(`${base}${path}`, { headers }, (res) => {
      status = res.statusCode!;
      contentType = String(res.headers['content-type']);
      waiters.splice(0).forEach((w) => w());
      res.on('data', (c) => {
        buf += String(c);
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          lines.push(JSON.parse(buf.slice(0, i)) as Record<string, unknown>);
          buf = buf.slice(i + 1);
        }
        waiters.splice(0).forEach((w) => w());
      });
      res.on('end', () => waiters.splice(0).forEach((w) => w()));
    });
    req.end();
    const until = async (pred: () => boolean) => {
      const deadline = Date.now() + 5000;
      while (!pred()) {
        if (Date.now() > deadline) throw new Error(`timed out; got ${JSON.stringify(lines)}`);
        await new Promise<void>((r) => {
          waiters.push(r);
          setTimeout(r, 50);
        });
      }
    };
    return {
      lines,
      until,
      close: () => req.destroy(),
      status: () => status,
      contentType: () => contentType,
    };
  }

  it('sends headers at once, then live events as they happen, and unsubscribes on disconnect', async () => {
    const w = openWatch(
      `/apis/metrics.annex.dev/v1beta1/nodes?watch=true&resourceVersion=${nodes.rv}`,
    );
    await w.until(() => w.status() === 200);
    expect(w.contentType()).toBe('application/json;stream=watch');
    expect(w.lines).toEqual([]);
    nodes.put(node('n2', '99m'));
    await w.until(() => w.lines.length === 1);
    expect(w.lines[0]).toMatchObject({
      type: 'MODIFIED',
      object: {
        kind: 'NodeMetrics',
        apiVersion: 'metrics.annex.dev/v1beta1',
        metadata: { name: 'n2' },
      },
    });
    const before = nodes.listeners.size;
    w.close();
    await new Promise((r) => setTimeout(r, 100));
    expect(nodes.listeners.size).toBe(before - 1);
  });

  it('serves kubectl get -w: Table events, headers only in the first one', async () => {
    const w = openWatch(
      '/apis/metrics.annex.dev/v1beta1/nodes?watch=true&fieldSelector=metadata.name%3Dn4&resourceVersion=0&timeoutSeconds=2',
      {
        Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json',
      },
    );
    await w.until(() => w.lines.length === 1);
    nodes.put(node('n4', '42m'));
    nodes.put(node('n3', '1m'));
    await w.until(() => w.lines.length === 2);
    const [first, second] = w.lines as {
      type: string;
      object: { kind: string; columnDefinitions?: unknown; rows: { cells: unknown[] }[] };
    }[];
    expect(first!.type).toBe('ADDED');
    expect(first!.object.kind).toBe('Table');
    expect(first!.object.columnDefinitions).toBeDefined();
    expect(second!.type).toBe('MODIFIED');
    expect(second!.object.columnDefinitions).toBeUndefined();
    expect(second!.object.rows[0]!.cells).toEqual(['n4', '42m', '15s']);
    w.close();
  });

  it('sends an ERROR event with a 410 for a too-old resourceVersion', async () => {
    const r = await get('/apis/metrics.annex.dev/v1beta1/nodes?watch=1&resourceVersion=7');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text.trim())).toMatchObject({
      type: 'ERROR',
      object: {
        kind: 'Status',
        code: 410,
        reason: 'Expired',
        message: 'too old resource version: 7 (50)',
      },
    });
  });

  it('sends bookmarks when asked and ends at timeoutSeconds', async () => {
    const r = await get(
      `/apis/metrics.annex.dev/v1beta1/nodes?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=${nodes.rv}`,
    );
    const evs = r.text
      .trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { type: string; object: { metadata: { resourceVersion: string } } },
      );
    expect(evs.length).toBeGreaterThan(3);
    expect(
      evs.every(
        (e) => e.type === 'BOOKMARK' && e.object.metadata.resourceVersion === String(nodes.rv),
      ),
    ).toBe(true);
  });
});

describe('HTTP/2', () => {
  it('streams watch events and serves lists over h2 (the aggregator proxies over HTTP/2)', async () => {
    const { createServer, connect } = await import('node:http2');
    const app = new Koa();
    app.silent = true; // a watch the client cancels ends in a "Premature close" pipeline error
    app.use(statusErrors(createLogger('silent')));
    app.use(requestInfoMiddleware());
    app.use(aggregatedApi(groups));
    const h2 = createServer(app.callback());
    await new Promise<void>((r) => h2.listen(0, '127.0.0.1', r));
    const client = connect(`http://127.0.0.1:${(h2.address() as AddressInfo).port}`);
    try {
      const list = await new Promise<string>((resolve) => {
        const s = client.request({ ':path': '/apis/metrics.annex.dev/v1beta1/nodes' });
        let t = '';
        s.on('data', (c) => (t += String(c)));
        s.on('end', () => resolve(t));
      });
      expect((JSON.parse(list) as { kind: string }).kind).toBe('NodeMetricsList');
      const stream = client.request({
        ':path': `/apis/metrics.annex.dev/v1beta1/nodes?watch=true&resourceVersion=${nodes.rv}`,
      });
      const status = await new Promise<number>((r) =>
        stream.once('response', (h) => r(Number(h[':status']))),
      );
      expect(status).toBe(200);
      const firstLine = new Promise<string>((r) => stream.once('data', (c) => r(String(c))));
      nodes.put(node('n1', '7m'));
      expect(JSON.parse((await firstLine).trim())).toMatchObject({
        type: 'MODIFIED',
        object: { metadata: { name: 'n1' } },
      });
      stream.close();
    } finally {
      client.close();
      await new Promise((r) => h2.close(r));
    }
  });
});
