import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KubeApiError } from './errors.js';
import {
  EventRecorder,
  MAX_NOTE_BYTES,
  microTime,
  truncateUtf8,
  type EventBody,
  type EventInput,
  type EventSeries,
  type EventSink,
} from './events.js';

/**
 * An API server's events collection in memory, with every write logged. Events are
 * stored under their real names; the log says `<regarding>.<n>` for the n-th created.
 */
function fakeSink(opts: { latencyMs?: number } = {}) {
  const byAlias = new Map<string, EventBody>();
  const alias = new Map<string, string>();
  const writes: string[] = [];
  let n = 0;
  const wait = () =>
    opts.latencyMs ? new Promise((r) => setTimeout(r, opts.latencyMs)) : Promise.resolve();
  const sink: EventSink = {
    async create(ns, event) {
      await wait();
      const a = `${ns}/${event.regarding.name}.${++n}`;
      alias.set(`${ns}/${event.metadata.name}`, a);
      byAlias.set(a, structuredClone(event));
      writes.push(`create ${a} count=${event.series?.count ?? 1}`);
    },
    async patchSeries(ns, name, series: EventSeries) {
      await wait();
      const a = alias.get(`${ns}/${name}`) ?? '';
      const e = byAlias.get(a);
      if (!e) {
        throw new KubeApiError('PATCH', name, { code: 404, reason: 'NotFound', message: 'gone' });
      }
      e.series = series;
      writes.push(`patch ${a} count=${series.count}`);
    },
  };
  return { sink, events: byAlias, writes };
}

const denied = (name = 'web.front', note = 'policy names rule dns: metadata.name'): EventInput => ({
  regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name },
  reason: 'PolicyViolation',
  action: 'Denied',
  note,
  type: 'Warning',
});

const recorder = (
  sink: EventSink,
  more: Partial<ConstructorParameters<typeof EventRecorder>[0]> = {},
) => new EventRecorder({ sink, controller: 'annex.dev/policy', instance: 'annex-0', ...more });

describe('EventRecorder', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: Date.parse('2026-01-02T03:04:05.678Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes an events.k8s.io/v1 Event with controller, instance and microsecond time', async () => {
    const { sink, events } = fakeSink();
    const r = recorder(sink);
    r.record('shop', denied());
    await r.idle();
    expect([...events.values()]).toEqual([
      {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name: expect.stringMatching(/^web\.front\.[0-9a-f]+$/), namespace: 'shop' },
        regarding: {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          namespace: 'shop',
          name: 'web.front',
        },
        reason: 'PolicyViolation',
        action: 'Denied',
        note: 'policy names rule dns: metadata.name',
        type: 'Warning',
        eventTime: '2026-01-02T03:04:05.678000Z',
        reportingController: 'annex.dev/policy',
        reportingInstance: 'annex-0',
      },
    ]);
  });

  it('correlates identical events into one Event whose series counts them all', async () => {
    const { sink, events, writes } = fakeSink();
    const r = recorder(sink);
    for (let i = 0; i < 5; i++) {
      r.record('shop', denied());
      await r.idle();
      vi.advanceTimersByTime(1000);
    }
    expect(events.size).toBe(1);
    const [e] = [...events.values()];
    expect(e!.series).toEqual({
      count: 5,
      lastObservedTime: microTime(Date.parse('2026-01-02T03:04:09.678Z')),
    });
    expect(writes).toEqual([
      'create shop/web.front.1 count=1',
      'patch shop/web.front.1 count=2',
      'patch shop/web.front.1 count=3',
      'patch shop/web.front.1 count=4',
      'patch shop/web.front.1 count=5',
    ]);
  });

  it('coalesces repeats that arrive while a write is in flight', async () => {
    const { sink, writes } = fakeSink({ latencyMs: 50 });
    const r = recorder(sink);
    for (let i = 0; i < 100; i++) r.record('shop', denied());
    await vi.advanceTimersByTimeAsync(200);
    await r.idle();
    expect(writes).toEqual(['create shop/web.front.1 count=1', 'patch shop/web.front.1 count=100']);
  });

  it('keeps events that differ apart: another note, object or action', async () => {
    const { sink, events } = fakeSink();
    const r = recorder(sink);
    r.record('shop', denied());
    r.record('shop', denied('web.front', 'policy names rule other: metadata.name'));
    r.record('shop', denied('api.front'));
    r.record('shop', { ...denied(), action: 'Warned' });
    await r.idle();
    expect(events.size).toBe(4);
  });

  it('starts a new Event once the window has passed without a repeat', async () => {
    const { sink, writes } = fakeSink();
    const r = recorder(sink, { windowMs: 60_000 });
    r.record('shop', denied());
    await r.idle();
    vi.advanceTimersByTime(59_000);
    r.record('shop', denied());
    await r.idle();
    vi.advanceTimersByTime(61_000);
    r.record('shop', denied());
    await r.idle();
    expect(writes).toEqual([
      'create shop/web.front.1 count=1',
      'patch shop/web.front.1 count=2',
      'create shop/web.front.2 count=1',
    ]);
  });

  it('rate-limits writes per object with a token bucket; the count catches up when a token comes', async () => {
    const { sink, writes, events } = fakeSink();
    const r = recorder(sink, { burst: 3, refillMs: 10_000 });
    for (let i = 0; i < 10; i++) {
      r.record('shop', denied());
      await r.idle();
      vi.advanceTimersByTime(100);
    }
    // Three tokens: the create and two patches; the other seven repeats wait.
    expect(writes).toEqual([
      'create shop/web.front.1 count=1',
      'patch shop/web.front.1 count=2',
      'patch shop/web.front.1 count=3',
    ]);
    // Another object has its own bucket.
    r.record('shop', denied('api.front'));
    await r.idle();
    expect(writes).toHaveLength(4);
    // One token refills in 10 s: one write carries every repeat seen meanwhile.
    await vi.advanceTimersByTimeAsync(10_000);
    await r.idle();
    expect(writes.slice(4)).toEqual(['patch shop/web.front.1 count=10']);
    expect(events.get('shop/web.front.1')!.series!.count).toBe(10);
  });

  it('recreates the Event when it has gone (TTL) and carries the series over', async () => {
    const { sink, events, writes } = fakeSink();
    const r = recorder(sink);
    r.record('shop', denied());
    await r.idle();
    events.clear();
    r.record('shop', denied());
    await r.idle();
    expect(writes).toEqual(['create shop/web.front.1 count=1', 'create shop/web.front.2 count=2']);
    expect(events.get('shop/web.front.2')!.series!.count).toBe(2);
  });

  it('reports a failed create to onError and never throws', async () => {
    const errors: string[] = [];
    const sink: EventSink = {
      create: () => Promise.reject(new Error('namespace is terminating')),
      patchSeries: () => Promise.resolve(),
    };
    const r = recorder(sink, { onError: (e, ev) => errors.push(`${ev.action}: ${e.message}`) });
    expect(() => r.record('shop', denied())).not.toThrow();
    await r.idle();
    expect(errors).toEqual(['Denied: namespace is terminating']);
  });

  it('retries a refused write with backoff until it holds, spending no further token', async () => {
    const { sink, writes } = fakeSink();
    const forbidden = new KubeApiError('POST', 'events', {
      code: 403,
      reason: 'Forbidden',
      message: 'events is forbidden',
    });
    let refusals = 3;
    const create = sink.create.bind(sink);
    sink.create = (ns, ev) => (refusals-- > 0 ? Promise.reject(forbidden) : create(ns, ev));
    const delays: (number | undefined)[] = [];
    // One token: a retry that took another would wait refillMs (5 min) for it.
    const r = recorder(sink, { burst: 1, onError: (_e, _ev, ms) => delays.push(ms) });
    r.record('shop', denied());
    await r.idle();
    r.record('shop', denied()); // a repeat while it waits joins the retried write
    for (const ms of [500, 1000, 2000]) {
      expect(writes).toEqual([]);
      await vi.advanceTimersByTimeAsync(ms);
      await r.idle();
    }
    expect(delays).toEqual([500, 1000, 2000]);
    expect(writes).toEqual(['create shop/web.front.1 count=2']);
  });

  it('drops an Event the API server refuses as such (422), without retrying', async () => {
    let calls = 0;
    const sink: EventSink = {
      create: () => {
        calls++;
        return Promise.reject(
          new KubeApiError('POST', 'events', { code: 422, reason: 'Invalid', message: 'bad' }),
        );
      },
      patchSeries: () => Promise.resolve(),
    };
    const delays: (number | undefined)[] = [];
    const r = recorder(sink, { onError: (_e, _ev, ms) => delays.push(ms) });
    r.record('shop', denied());
    await r.idle();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(calls).toBe(1);
    expect(delays).toEqual([undefined]);
  });

  it('holds at most maxEntries series and buckets', async () => {
    const { sink } = fakeSink();
    const r = recorder(sink, { maxEntries: 50 });
    for (let i = 0; i < 500; i++) r.record('shop', denied(`app-${i}`));
    await r.idle();
    expect(r.size.series).toBeLessThanOrEqual(50);
    expect(r.size.buckets).toBeLessThanOrEqual(50);
  });

  it('cuts the note to 1 KB and makes a valid name prefix from any name', async () => {
    const { sink, events } = fakeSink();
    const r = recorder(sink);
    r.record('shop', denied('Web_Front!', 'é'.repeat(2000)));
    await r.idle();
    const [e] = [...events.values()];
    expect(Buffer.byteLength(e!.note)).toBeLessThanOrEqual(MAX_NOTE_BYTES);
    expect(e!.note.endsWith('…')).toBe(true);
    expect(e!.metadata.name).toMatch(/^web-front\.[0-9a-f]+$/);
    expect(truncateUtf8('short', 10)).toBe('short');
  });
});
