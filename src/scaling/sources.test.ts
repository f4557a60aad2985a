import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  httpGet,
  jsonValue,
  listPath,
  prometheusValue,
  readSource,
  SourceError,
} from './sources.js';

describe('jsonValue', () => {
  it('takes the first match of a JSONPath, numbers and numeric strings', () => {
    expect(jsonValue('{"queue":{"depth":42}}', '$.queue.depth')).toBe(42);
    expect(jsonValue('{"q":[{"n":"1.5"},{"n":3}]}', '$.q[*].n')).toBe(1.5);
  });

  it('says in one line why a body gives no number', () => {
    expect(() => jsonValue('<html>', '$.a')).toThrow(/^the body is not JSON \(/);
    expect(() => jsonValue('{"a":1}', '$.b')).toThrow('JSONPath $.b matches nothing');
    expect(() => jsonValue('{"a":"lots"}', '$.a')).toThrow('JSONPath $.a is "lots", not a number');
    expect(() => jsonValue('{"a":null}', '$.a')).toThrow(SourceError);
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

  it('refuses a corrupt body and a metric that is absent', () => {
    expect(() => prometheusValue('queue_depth seven', 'queue_depth')).toThrow(
      /^not Prometheus text: line 1/,
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
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/slow') return void setTimeout(() => res.end('{}'), 2000);
      if (req.url === '/500') {
        res.statusCode = 500;
        return void res.end('boom');
      }
      res.end('{"v":3}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });

  it('reads a body, and fails on a status, a timeout and a refused connection', async () => {
    expect(await httpGet(`${base}/ok`, { timeoutMs: 1000 })).toBe('{"v":3}');
    await expect(httpGet(`${base}/500`, { timeoutMs: 1000 })).rejects.toThrow(
      `GET ${base}/500: HTTP 500`,
    );
    await expect(httpGet(`${base}/slow`, { timeoutMs: 200 })).rejects.toMatchObject({
      reason: 'timeout',
      message: `GET ${base}/slow: no answer within 0.2s`,
    });
    await expect(httpGet('http://127.0.0.1:1/', { timeoutMs: 1000 })).rejects.toMatchObject({
      reason: 'http',
    });
    await expect(httpGet('nope', { timeoutMs: 1000 })).rejects.toThrow('nope is not a URL');
  });

  it('reads a JSON source end to end', async () => {
    const v = await readSource(
      { json: { url: `${base}/ok`, path: '$.v' } },
      { kube: null, namespace: 'x', timeoutMs: 1000 },
    );
    expect(v).toBe(3);
  });
});
