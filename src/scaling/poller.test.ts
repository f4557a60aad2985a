import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetricPoller, timingOf, toQuantity } from './poller.js';
import type { ExternalMetric } from './types.js';

let body = '{"v": 2}';
let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === '/slow') return void setTimeout(() => res.end(body), 1000);
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

const metric = (name: string, spec: Partial<ExternalMetric['spec']> = {}): ExternalMetric => ({
  metadata: { name, namespace: 'shop', generation: 1 },
  spec: { json: { url, path: '$.v' }, intervalSeconds: 5, ...spec },
});

describe('toQuantity', () => {
  it('prints milli precision in canonical form', () => {
    expect(toQuantity(5)).toBe('5');
    expect(toQuantity(1.5)).toBe('1500m');
    expect(toQuantity(0.0004)).toBe('0');
    expect(toQuantity(2500)).toBe('2500');
  });
});

describe('MetricPoller', () => {
  it('defaults the staleness bound to three intervals', () => {
    expect(timingOf({ intervalSeconds: 5 })).toEqual({
      intervalMs: 5000,
      timeoutMs: 5000,
      staleAfterMs: 15000,
    });
    expect(
      timingOf({ intervalSeconds: 5, staleAfterSeconds: 6, timeoutSeconds: 1 }).staleAfterMs,
    ).toBe(6000);
  });

  it('serves a value read, reports a failure at once, and recovers', async () => {
    const changes: unknown[] = [];
    const p = new MetricPoller(metric('ok'), null, (s) => changes.push(s));
    expect(p.availability()).toEqual({ ok: false, reason: 'not read yet' });
    body = '{"v": 2}';
    await p.poll();
    const a = p.availability();
    expect(a.ok && a.reading.quantity).toBe('2');
    body = 'garbage';
    await p.poll();
    expect(p.availability()).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/^the body is not JSON/),
    });
    // The last value stays in status, with the error beside it.
    expect(p.status()).toMatchObject({
      available: false,
      value: '2',
      lastError: expect.any(String),
    });
    body = '{"v": 3}';
    await p.poll();
    await p.poll(); // unchanged: no status write
    expect(changes).toHaveLength(3);
    expect(p.status()).toMatchObject({ available: true, value: '3', observedGeneration: 1 });
    const text = await register.getSingleMetricAsString('annex_metric_source_failures_total');
    expect(text).toContain(
      'annex_metric_source_failures_total{namespace="shop",name="ok",source="json",reason="parse"} 1',
    );
  });

  it('never serves a value older than staleAfterSeconds', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const p = new MetricPoller(
      metric('stale', { staleAfterSeconds: 10 }),
      null,
      () => {},
      () => now,
    );
    body = '{"v": 4}';
    await p.poll();
    now = new Date('2026-01-01T00:00:10Z');
    expect(p.availability().ok).toBe(true);
    now = new Date('2026-01-01T00:00:11Z');
    expect(p.availability()).toEqual({
      ok: false,
      reason: 'the last value is 11s old, past staleAfterSeconds (10)',
    });
  });

  it('times a source out', async () => {
    const p = new MetricPoller(
      metric('slow', { json: { url: `${url}slow`, path: '$.v' }, timeoutSeconds: 0.2 }),
      null,
    );
    await p.poll();
    expect(p.availability()).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no answer within 0.2s$/),
    });
  });
});
