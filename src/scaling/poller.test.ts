import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { register } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundPolicy } from './outbound.js';
import { MetricPoller, timingOf, toQuantity, type PollContext } from './poller.js';
import type { ExternalMetric, ExternalMetricStatus } from './types.js';

let body = '{"v": 2}';
const local: PollContext = {
  kube: null,
  outbound: OutboundPolicy.from({ urls: [], hosts: [], cidrs: ['127.0.0.1/32'] }),
  reviewer: null,
};
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
    const p = new MetricPoller(metric('ok'), local, (s) => changes.push(s));
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
      local,
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
      local,
    );
    await p.poll();
    expect(p.availability()).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/no answer within 0.2s$/),
    });
  });
});

describe('MetricPoller status.conditions', () => {
  const available = (s: ExternalMetricStatus) => s.conditions?.find((c) => c.type === 'Available');

  it('says Available with a reason per failure, and moves lastTransitionTime only when the status flips', async () => {
    let now = new Date('2026-01-01T00:00:00Z');
    const changes: ExternalMetricStatus[] = [];
    const p = new MetricPoller(
      metric('cond'),
      local,
      (s) => changes.push(s),
      () => now,
    );
    body = '{"v": 1}';
    await p.poll();
    expect(available(changes.at(-1)!)).toEqual({
      type: 'Available',
      status: 'True',
      reason: 'ValueRead',
      message: 'the last read succeeded',
      observedGeneration: 1,
      lastTransitionTime: '2026-01-01T00:00:00.000Z',
    });
    now = new Date('2026-01-01T00:00:05Z');
    body = '<html>secret</html>';
    await p.poll();
    expect(available(changes.at(-1)!)).toMatchObject({
      status: 'False',
      reason: 'ParseFailed',
      message: 'the body is not JSON (at byte 0)',
      lastTransitionTime: '2026-01-01T00:00:05.000Z',
    });
    // Still failing, for another reason: the condition's message changes, its transition time does not.
    now = new Date('2026-01-01T00:00:10Z');
    body = '{"w": 1}';
    await p.poll();
    expect(available(changes.at(-1)!)).toMatchObject({
      status: 'False',
      reason: 'ParseFailed',
      message: 'JSONPath $.v matches nothing',
      lastTransitionTime: '2026-01-01T00:00:05.000Z',
    });
    expect(JSON.stringify(changes)).not.toContain('secret');
    p.stop();
  });

  it('keeps the stored lastTransitionTime across a restart, and refuses an address nothing allows', async () => {
    const stored: ExternalMetric = {
      ...metric('meta', { json: { url: 'http://169.254.169.254/latest/meta-data', path: '$.v' } }),
      status: {
        conditions: [
          {
            type: 'Available',
            status: 'False',
            reason: 'SourceRefused',
            message: 'old text',
            lastTransitionTime: '2025-12-31T00:00:00.000Z',
          },
        ],
      },
    };
    const changes: ExternalMetricStatus[] = [];
    const p = new MetricPoller(stored, local, (s) => changes.push(s));
    await p.poll();
    expect(changes.at(-1)).toMatchObject({ available: false });
    expect(available(changes.at(-1)!)).toEqual({
      type: 'Available',
      status: 'False',
      reason: 'SourceRefused',
      message:
        "GET http://169.254.169.254/latest/meta-data: refused: 169.254.169.254 is link-local (cloud metadata: 169.254.169.254), refused unless annex's scaling.allow names this address",
      observedGeneration: 1,
      lastTransitionTime: '2025-12-31T00:00:00.000Z',
    });
  });

  it('turns Stale when no read succeeds within staleAfterSeconds, without waiting for one to end', async () => {
    body = '{"v": 7}';
    const changes: ExternalMetricStatus[] = [];
    const p = new MetricPoller(
      metric('going-stale', { intervalSeconds: 1, staleAfterSeconds: 1 }),
      local,
      (s) => changes.push(s),
    );
    const stale = new Promise<ExternalMetricStatus>((resolve) => {
      const check = setInterval(() => {
        const last = changes.at(-1);
        if (last && available(last)?.reason === 'Stale') {
          clearInterval(check);
          resolve(last);
        }
      }, 20);
    });
    await p.poll(); // one read, then none: as if every later read hung
    expect(available(changes.at(-1)!)?.status).toBe('True');
    const s = await stale;
    expect(s).toMatchObject({ available: false, value: '7' });
    expect(s).not.toHaveProperty('lastError');
    expect(available(s)).toMatchObject({
      status: 'False',
      reason: 'Stale',
      message: 'no value read within staleAfterSeconds (1)',
    });
    p.stop();
  });
});
