import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient } from '../kube/client.js';
import { OutboundPolicy, type AllowList } from './outbound.js';
import {
  httpGet,
  jsonValue,
  listPath,
  prometheusValue,
  readSource,
  SourceError,
  type ReadContext,
} from './sources.js';

const policy = (allow: Partial<AllowList>) =>
  OutboundPolicy.from({ urls: [], hosts: [], cidrs: [], ...allow });
/** The test servers are on loopback: allowed by naming it, as an admin would. */
const loopback = policy({ cidrs: ['127.0.0.1/32', '::1/128'] });

describe('jsonValue', () => {
  it('takes the first match of a JSONPath, numbers and numeric strings', () => {
    expect(jsonValue('{"queue":{"depth":42}}', '$.queue.depth')).toBe(42);
    expect(jsonValue('{"q":[{"n":"1.5"},{"n":3}]}', '$.q[*].n')).toBe(1.5);
  });

  it('says in one line why a body gives no number, by position and type only', () => {
    expect(() => jsonValue('<html>oops</html>', '$.a')).toThrow(
      new SourceError('parse', 'the body is not JSON (at byte 0)'),
    );
    expect(() => jsonValue('{"ü": 1,}', '$.a')).toThrow('the body is not JSON (at byte 9)');
    expect(() => jsonValue('{"a":1}', '$.b')).toThrow('JSONPath $.b matches nothing');
    expect(() => jsonValue('{"a":"lots"}', '$.a')).toThrow(
      'JSONPath $.a is a string, not a number',
    );
    expect(() => jsonValue('{"a":{"k":"v"}}', '$.a')).toThrow('JSONPath $.a is an object');
    expect(() => jsonValue('{"a":1e999}', '$.a')).toThrow('is a number out of range');
    expect(() => jsonValue('{"a":null}', '$.a')).toThrow('JSONPath $.a is null, not a number');
    // A path that is wrong whatever the body: its own error. One that fails on this body: the class.
    expect(() => jsonValue('{"a":{"b":1}}', '$..[?(@.a')).toThrow(
      /^JSONPath \$\.\.\[\?\(@\.a: Unexpected/,
    );
    expect(() => jsonValue('{"x":{"y":{}}}', '$[?(@ && @.y && @.y.z.w)]')).toThrow(
      'JSONPath $[?(@ && @.y && @.y.z.w)]: fails on this body (Error)',
    );
  });

  it('never quotes the body, whatever it holds', () => {
    const marker = 'Zq9xK';
    const body = fc
      .tuple(fc.string(), fc.string())
      .map(([a, b]) => `${a}${marker}${b}`)
      .chain((garbage) =>
        fc.constantFrom(
          garbage,
          JSON.stringify({ a: garbage }),
          JSON.stringify({ a: { [garbage]: garbage } }),
          JSON.stringify({ a: [garbage, 1] }),
          `# TYPE ${marker} gauge\n${marker}{${marker}="${garbage}"} x\n`,
          `m{a="\\${marker}"} 1\n`,
        ),
      );
    fc.assert(
      fc.property(body, fc.constantFrom('$.a', '$.a[0]', '$.a.*', '$[?(@.a.b.c)]'), (b, path) => {
        for (const read of [() => jsonValue(b, path), () => prometheusValue(b, 'm')]) {
          try {
            read();
          } catch (e) {
            expect(e).toBeInstanceOf(SourceError);
            expect((e as Error).message).not.toContain(marker);
          }
        }
      }),
    );
  });
});

describe('prometheusValue', () => {
  const text = [
    '# TYPE http_requests_total counter',
    'http_requests_total{code="200",path="/"} 10',
    'http_requests_total{code="200",path="/a"} 5',
    'http_requests_total{code="500",path="/"} 1',
    'queue_depth 7',
  ].join('\n');

  it('sums the series whose labels match', () => {
    expect(prometheusValue(text, 'http_requests_total', { code: '200' })).toBe(15);
    expect(prometheusValue(text, 'http_requests_total')).toBe(16);
    expect(prometheusValue(text, 'queue_depth')).toBe(7);
  });

  it('refuses a corrupt body by line number, and a metric that is absent', () => {
    expect(() => prometheusValue('ok 1\nqueue_depth seven', 'queue_depth')).toThrow(
      new SourceError('parse', 'the body is not Prometheus text (line 2)'),
    );
    expect(() => prometheusValue(text, 'http_requests_total', { code: '404' })).toThrow(
      'no series http_requests_total{code="404"}',
    );
  });
});

describe('listPath', () => {
  it('builds core, grouped and all-namespace paths', () => {
    expect(listPath({ apiVersion: 'v1', resource: 'pods' }, 'shop')).toBe(
      '/api/v1/namespaces/shop/pods',
    );
    expect(listPath({ apiVersion: 'batch/v1', resource: 'jobs' }, '*')).toBe('/apis/batch/v1/jobs');
  });
});

describe('httpGet', () => {
  // One server on each loopback (127.0.0.1 and ::1): a refusal must reach neither.
  const servers: Server[] = [];
  let base: string;
  let port: number;
  let port6: number;
  const seen: string[] = [];
  let connections = 0;
  beforeAll(async () => {
    for (const host of ['127.0.0.1', '::1']) {
      const server = createServer((req, res) => {
        const path = new URL(req.url!, 'http://x').pathname;
        seen.push(path);
        if (path === '/slow') return void setTimeout(() => res.end('{}'), 2000);
        if (path === '/500') {
          res.statusCode = 500;
          return void res.end('boom');
        }
        if (path === '/moved') {
          res.writeHead(302, { location: `${base}/target` });
          return void res.end();
        }
        res.end('{"v":3}');
      });
      server.on('connection', () => connections++);
      await new Promise<void>((r) => server.listen(0, host, r));
      servers.push(server);
    }
    [port, port6] = servers.map((s) => (s.address() as AddressInfo).port) as [number, number];
    base = `http://127.0.0.1:${port}`;
  });
  afterAll(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('reads a body, and fails on a status, a redirect, a timeout and a refused connection', async () => {
    const opts = { timeoutMs: 1000, outbound: loopback };
    expect(await httpGet(`${base}/ok`, opts)).toBe('{"v":3}');
    await expect(httpGet(`${base}/500`, opts)).rejects.toThrow(`GET ${base}/500: HTTP 500`);
    await expect(httpGet(`${base}/moved`, opts)).rejects.toThrow(
      `GET ${base}/moved: HTTP 302 (redirects are not followed)`,
    );
    expect(seen).not.toContain('/target');
    await expect(httpGet(`${base}/slow`, { ...opts, timeoutMs: 200 })).rejects.toMatchObject({
      reason: 'timeout',
      message: `GET ${base}/slow: no answer within 0.2s`,
    });
    await expect(httpGet('http://127.0.0.1:1/', opts)).rejects.toMatchObject({
      reason: 'http',
      message: 'GET http://127.0.0.1:1/: connection refused (ECONNREFUSED)',
    });
    await expect(httpGet('nope', opts)).rejects.toThrow('the URL does not parse');
    // Credentials and query stay out of messages (they reach status and the log).
    await expect(httpGet(`http://user:pw@127.0.0.1:${port}/500?token=t`, opts)).rejects.toThrow(
      `GET ${base}/500: HTTP 500`,
    );
  });

  it('refuses loopback in every spelling, by name too, before connecting', async () => {
    const before = connections;
    const allowByName = policy({ hosts: ['localhost', 'local.test'] });
    const cases: [string, OutboundPolicy, RegExp][] = [
      [`http://127.0.0.1:${port}/`, policy({}), /refused: 127\.0\.0\.1 is loopback/],
      [`http://0x7f.1:${port}/`, policy({}), /refused: 127\.0\.0\.1 is loopback/],
      [`http://[::1]:${port6}/`, policy({}), /refused: ::1 is loopback/],
      [`http://[::ffff:127.0.0.1]:${port}/`, policy({}), /refused: ::ffff:7f00:1 is loopback/],
      [`http://0.0.0.0:${port}/`, policy({}), /refused: 0\.0\.0\.0 is "this host"/],
      [`http://[::]:${port}/`, policy({}), /refused: :: is the unspecified address/],
      // Listed by name, loopback by DNS: refused after resolution.
      ...[port, port6].map((p): [string, OutboundPolicy, RegExp] => [
        `http://localhost:${p}/`,
        allowByName,
        /refused: localhost resolves to (127\.0\.0\.1|::1), which is loopback/,
      ]),
      // Not listed at all: refused before DNS is asked.
      [
        `http://example.invalid:${port}/`,
        allowByName,
        /refused: example\.invalid is not in annex's scaling\.allow$/,
      ],
      // A CIDR covering everything does not cover loopback.
      [`http://127.0.0.1:${port}/`, policy({ cidrs: ['0.0.0.0/0', '::/0'] }), /loopback/],
    ];
    for (const [url, outbound, message] of cases) {
      await expect(httpGet(url, { timeoutMs: 1000, outbound }), url).rejects.toMatchObject({
        reason: 'refused',
        message: expect.stringMatching(message),
      });
    }
    expect(connections).toBe(before);
    // The same addresses, named by the admin, connect.
    for (const url of [`http://127.0.0.1:${port}/ok`, `http://[::1]:${port6}/ok`]) {
      const outbound = policy({ urls: [url.replace('/ok', '/')] });
      expect(await httpGet(url, { timeoutMs: 1000, outbound })).toBe('{"v":3}');
    }
    expect(connections).toBe(before + 2);
  });

  it('reads a JSON source end to end', async () => {
    const v = await readSource(
      { json: { url: `${base}/ok`, path: '$.v' } },
      {
        kube: null,
        namespace: 'x',
        timeoutMs: 1000,
        outbound: loopback,
        mayCount: () => Promise.reject(new Error('not counting')),
      },
    );
    expect(v).toBe(3);
  });
});

describe('an objects source', () => {
  const paths: string[] = [];
  const kube = {
    request: async (_m: string, path: string) => {
      paths.push(path);
      return { items: [{}, {}] };
    },
  } as unknown as KubeClient;
  const asked: string[] = [];
  const ctx = (allowed: boolean): ReadContext => ({
    kube,
    namespace: 'shop',
    timeoutMs: 1000,
    outbound: loopback,
    mayCount: async (src, ns) => {
      asked.push(`${src.resource} ${ns}`);
      if (!allowed) throw new SourceError('unauthorized', 'no');
    },
  });

  it('counts in its own namespace without asking, elsewhere only once the author may', async () => {
    const pods = { apiVersion: 'v1', resource: 'pods' };
    expect(await readSource({ objects: pods }, ctx(false))).toBe(2);
    expect(await readSource({ objects: { ...pods, namespace: '' } }, ctx(false))).toBe(2);
    expect(await readSource({ objects: { ...pods, namespace: 'shop' } }, ctx(false))).toBe(2);
    expect(asked).toEqual([]);
    expect(paths).toEqual(Array(3).fill('/api/v1/namespaces/shop/pods'));
    await expect(
      readSource({ objects: { ...pods, namespace: '*' } }, ctx(false)),
    ).rejects.toMatchObject({ reason: 'unauthorized' });
    await expect(
      readSource({ objects: { ...pods, namespace: 'bank' } }, ctx(false)),
    ).rejects.toMatchObject({ reason: 'unauthorized' });
    expect(paths).toHaveLength(3); // nothing listed for a refused count
    expect(await readSource({ objects: { ...pods, namespace: '*' } }, ctx(true))).toBe(2);
    expect(asked).toEqual(['pods *', 'pods bank', 'pods *']);
    expect(paths.at(-1)).toBe('/api/v1/pods');
  });
});
