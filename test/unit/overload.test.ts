// Overload protection against the real listener: each priority class has its own bound,
// a refusal is a fast 429 Status with Retry-After, and a runaway client does not starve
// the API server's own calls (reviews, discovery, probes).
import type http2 from 'node:http2';
import { Worker } from 'node:worker_threads';
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  ca,
  h2Connect,
  h2Request,
  median,
  reviewBody,
  servedAsUsual,
  sleep,
  start,
  useHostileServer,
} from './hostile-net.js';
import { priorityOf } from '../../src/server/overload.js';

useHostileServer();

const limits = { review: 4, discovery: 2, watch: 2, requests: 4 };
const review = {
  ':method': 'POST',
  ':path': '/validate/names.annex.dev?timeout=10s',
  'content-type': 'application/json',
};

async function inFlight(priority: string): Promise<number> {
  const m = await register.getSingleMetric('annex_requests_in_flight')!.get();
  return m.values.find((v) => v.labels.priority === priority)?.value ?? 0;
}

async function rejectedCount(priority: string): Promise<number> {
  const m = await register.getSingleMetric('annex_requests_rejected_total')!.get();
  return m.values.find((v) => v.labels.priority === priority)?.value ?? 0;
}

describe('priorityOf', () => {
  it.each([
    ['POST', '/validate/names.annex.dev?timeout=10s', 'review'],
    ['POST', '/mutate/defaults.annex.dev', 'review'],
    ['POST', '/convert/widgets', 'review'],
    ['GET', '/validate/names.annex.dev', 'requests'],
    ['GET', '/apis', 'discovery'],
    ['GET', '/api', 'discovery'],
    ['GET', '/apis/metrics.annex.dev', 'discovery'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1', 'discovery'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/', 'discovery'],
    ['GET', '/openapi/v3/apis/metrics.annex.dev/v1alpha1', 'discovery'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/pods', 'requests'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/pods?watch=true', 'watch'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/pods?limit=1&watch=1', 'watch'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/pods?watch=false', 'requests'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/pods?watch=0', 'requests'],
    ['GET', '/apis/metrics.annex.dev/v1alpha1/watch/pods', 'watch'],
    ['GET', '/apis/g/v1/namespaces/watch/pods', 'requests'],
    ['GET', '/metrics', 'requests'],
    ['DELETE', '/apis', 'requests'],
  ])('%s %s → %s', (method, url, want) => {
    expect(priorityOf(method, url)).toBe(want);
  });
});

describe('in-flight bounds per priority class', () => {
  it('refuses the request over its class bound at once with 429, Retry-After and a Status', async () => {
    const l = await start({}, { maxInFlight: limits });
    const s = await h2Connect(l);
    const before = await rejectedCount('requests');
    const slow = Array.from({ length: limits.requests }, () =>
      h2Request(s, { ':path': '/slow?ms=3000' }),
    );
    let slowAnswered = 0;
    for (const p of slow)
      void p.then(
        () => slowAnswered++,
        () => {},
      );
    // The slow ones are in flight before the one over the bound is sent.
    while ((await inFlight('requests')) < limits.requests) await sleep(10);
    const over = await new Promise<{ status: number; retry: unknown; body: string }>((resolve) => {
      const req = s.request({ ':path': '/slow?ms=10' });
      let status = 0;
      let retry: unknown;
      let body = '';
      req.on('response', (h) => {
        status = Number(h[':status']);
        retry = h['retry-after'];
      });
      req.on('data', (d) => (body += d));
      req.on('end', () => resolve({ status, retry, body }));
    });
    expect(over.status).toBe(429);
    expect(over.retry).toBe('1');
    expect(JSON.parse(over.body)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Too many requests, please try again later.',
      reason: 'TooManyRequests',
      details: { retryAfterSeconds: 1 },
      code: 429,
    });
    expect(slowAnswered).toBe(0); // answered at once, not queued behind the slow ones
    // The other classes are untouched: a review, discovery and a probe are answered.
    expect((await h2Request(s, review, reviewBody)).status).toBe(200);
    expect((await h2Request(s, { ':path': '/apis' })).status).not.toBe(429);
    expect((await h2Request(s, { ':path': '/livez' })).status).toBe(200);
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(await rejectedCount('requests')).toBe(before + 1);
    // Slots come back when the requests end.
    expect((await h2Request(s, { ':path': '/slow?ms=10' })).status).toBe(200);
  });

  it('counts watches until they close, apart from short requests', async () => {
    const l = await start({}, { maxInFlight: limits });
    const s = await h2Connect(l);
    const watches = Array.from({ length: limits.watch }, () =>
      h2Request(s, { ':path': '/stream?ms=1200&watch=true' }),
    );
    await sleep(200);
    // The watch handler has returned (its body streams on), yet the slot is held.
    expect((await h2Request(s, { ':path': '/stream?ms=200&watch=1' })).status).toBe(429);
    // Short requests have their own budget, all of it.
    const short = await Promise.all(
      Array.from({ length: limits.requests }, () => h2Request(s, { ':path': '/slow?ms=100' })),
    );
    expect(short.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    for (const w of await Promise.all(watches)) expect(w.body).toContain('done');
    expect((await h2Request(s, { ':path': '/stream?ms=200&watch=1' })).status).toBe(200);
  });

  it('a runaway client gets 429s while the API server is served as usual', async () => {
    const l = await start({}, { maxInFlight: { ...limits, requests: 50 } });
    const apiServer = await h2Connect(l);
    const quiet = await reviewLatencies(apiServer, 30);
    // The flood runs in a worker thread, a client of its own: 4 sessions × 200 lanes of
    // slow requests, retried at once on a 429 (a runaway client ignores Retry-After).
    const flood = new Worker(FLOOD, { eval: true, workerData: { url: l.url, ca } });
    const counts = new Promise<Record<string, number>>((resolve, reject) => {
      flood.once('message', resolve);
      flood.once('error', reject);
    });
    await sleep(500);
    const loaded = await reviewLatencies(apiServer, 30);
    flood.postMessage('stop');
    const c = await counts;
    await flood.terminate();
    console.log(
      `overload: flood ${JSON.stringify(c)}; review p50 ${median(quiet).toFixed(1)} ms quiet, ${median(loaded).toFixed(1)} ms under flood (slowest ${loaded
        .slice(-4)
        .map((x) => x.toFixed(0))
        .join(', ')} ms)`,
    );
    expect(c.refused).toBeGreaterThan(0);
    expect(c.other).toBe(0);
    // Every review was answered (reviewLatencies checks 200). The event loop is shared
    // with the flood's refusals, so a review can wait behind a burst of them; bounded.
    expect(median(loaded)).toBeLessThan(servedAsUsual(quiet, 250));
  }, 30_000);
});

/** `n` sequential reviews and discovery probes: the reviews' latencies, sorted. */
async function reviewLatencies(s: http2.ClientHttp2Session, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = await h2Request(s, review, reviewBody);
    out.push(performance.now() - t0);
    expect(r.status).toBe(200);
    expect((await h2Request(s, { ':path': '/apis' })).status).not.toBe(429);
  }
  return out.sort((a, b) => a - b);
}

const FLOOD = `
const http2 = require('node:http2');
const { parentPort, workerData } = require('node:worker_threads');
let stop = false;
const c = { ok: 0, refused: 0, other: 0 };
parentPort.once('message', () => (stop = true));
const one = (s) => new Promise((resolve) => {
  const req = s.request({ ':path': '/slow?ms=200' });
  req.on('response', (h) => {
    const st = Number(h[':status']);
    if (st === 200) c.ok++; else if (st === 429) c.refused++; else c.other++;
  });
  req.on('error', () => c.other++);
  req.on('close', resolve);
  req.resume();
});
const sessions = Array.from({ length: 4 }, () =>
  http2.connect(workerData.url, { ca: workerData.ca, servername: 'localhost' }));
Promise.all(sessions.flatMap((s) => Array.from({ length: 200 }, async () => {
  while (!stop) await one(s);
}))).then(() => {
  for (const s of sessions) s.close();
  parentPort.postMessage(c);
});
`;
