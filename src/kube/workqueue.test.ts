import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PermanentError, WorkQueue } from './workqueue.js';

/** A handler whose runs the test resolves or rejects one by one. */
function gated() {
  const calls: string[] = [];
  const pending: { name: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  const handle = (name: string) =>
    new Promise<void>((resolve, reject) => {
      calls.push(name);
      pending.push({ name, resolve, reject });
    });
  return { calls, pending, handle };
}

const flush = () => vi.advanceTimersByTimeAsync(0);

describe('WorkQueue', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('handles a key queued several times once', async () => {
    const q = new WorkQueue({ concurrency: 1 });
    const g = gated();
    const w = q.writer('x', { handle: g.handle });
    w.add('busy');
    w.add('a');
    w.add('a');
    w.add('a');
    await flush();
    expect(g.calls).toEqual(['busy']);
    expect(q.stats().depth).toBe(1);
    g.pending.shift()!.resolve();
    await flush();
    g.pending.shift()!.resolve();
    await flush();
    expect(g.calls).toEqual(['busy', 'a']);
    await q.shutDown();
  });

  it('never handles a key twice at once; re-added while handled, handles it once after', async () => {
    const q = new WorkQueue();
    const g = gated();
    const w = q.writer('x', { handle: g.handle });
    w.add('a');
    await flush();
    w.add('a');
    w.add('a');
    await flush();
    expect(g.calls).toEqual(['a']);
    g.pending.shift()!.resolve();
    await flush();
    expect(g.calls).toEqual(['a', 'a']);
    g.pending.shift()!.resolve();
    await flush();
    expect(g.calls).toEqual(['a', 'a']);
    await q.shutDown();
  });

  it('retries a failure with backoff doubling from 0.5 s to 30 s; a success forgets it', async () => {
    const q = new WorkQueue();
    let fail = true;
    const at: number[] = [];
    const delays: (number | undefined)[] = [];
    const t0 = Date.now();
    const w = q.writer('policy/status', {
      handle: (name) => {
        expect(name).toBe('p');
        at.push(Date.now() - t0);
        if (fail) throw new Error('409');
      },
      onError: (_n, _e, ms) => delays.push(ms),
    });
    w.add('p');
    await vi.advanceTimersByTimeAsync(120_000);
    expect(delays.slice(0, 8)).toEqual([500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    expect(at.slice(0, 4)).toEqual([0, 500, 1500, 3500]);
    fail = false;
    await vi.advanceTimersByTimeAsync(30_000);
    const runs = at.length;
    expect(q.stats().delayed).toBe(0);
    // Forgotten: the next failure waits the first delay again.
    fail = true;
    w.add('p');
    await flush();
    expect(at.length).toBe(runs + 1);
    expect(delays.at(-1)).toBe(500);
    expect(q.stats().retries).toBe(delays.length);
    await q.shutDown();
  });

  it('does not hammer a key waiting for its retry; forget writes it now', async () => {
    const q = new WorkQueue();
    let runs = 0;
    const w = q.writer('x', {
      handle: () => {
        runs++;
        throw new Error('down');
      },
    });
    w.add('a');
    await flush();
    for (let i = 0; i < 10; i++) w.add('a');
    await flush();
    expect(runs).toBe(1);
    w.forget('a');
    w.add('a');
    await flush();
    expect(runs).toBe(2);
    await q.shutDown();
  });

  it('drops a permanent failure without retrying it', async () => {
    const q = new WorkQueue();
    const errors: (number | undefined)[] = [];
    let runs = 0;
    const w = q.writer('event', {
      handle: (name) => {
        runs++;
        if (name === 'a') throw new PermanentError('400');
        throw Object.assign(new Error('422'), { code: 422 });
      },
      permanent: (e) => (e as { code?: number }).code === 422,
      onError: (_n, _e, ms) => errors.push(ms),
    });
    w.add('a');
    w.add('b');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(runs).toBe(2);
    expect(errors).toEqual([undefined, undefined]);
    expect(q.stats()).toMatchObject({ delayed: 0, retries: 0 });
    await q.shutDown();
  });

  it('limits retries overall with a token bucket (burst, then qps)', async () => {
    // One token, then one a second: the bucket's wait beats the 500 ms backoff.
    const q2 = new WorkQueue({ qps: 1, burst: 1 });
    const d2: number[] = [];
    const w2 = q2.writer('x', {
      handle: () => {
        throw new Error('down');
      },
      onError: (_n, _e, ms) => d2.push(ms!),
    });
    w2.add('a');
    w2.add('b');
    w2.add('c');
    await flush();
    expect(d2).toEqual([500, 1000, 2000]);
    await q2.shutDown();
  });

  it('runs at most `concurrency` handlers at once', async () => {
    const q = new WorkQueue({ concurrency: 2 });
    const g = gated();
    const w = q.writer('x', { handle: g.handle });
    for (const n of ['a', 'b', 'c', 'd']) w.add(n);
    await flush();
    expect(g.calls).toEqual(['a', 'b']);
    expect(q.stats()).toMatchObject({ depth: 2, processing: 2 });
    g.pending.shift()!.resolve();
    await flush();
    expect(g.calls).toEqual(['a', 'b', 'c']);
    for (const p of g.pending.splice(0)) p.resolve();
    await flush();
    for (const p of g.pending.splice(0)) p.resolve();
    await flush();
    expect(g.calls).toEqual(['a', 'b', 'c', 'd']);
    await q.shutDown();
  });

  it('addAfter waits; the earlier of two times wins', async () => {
    const q = new WorkQueue();
    const seen: number[] = [];
    const t0 = Date.now();
    const w = q.writer('x', { handle: () => void seen.push(Date.now() - t0) });
    w.addAfter('a', 5000);
    w.addAfter('a', 2000);
    w.addAfter('a', 9000);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(seen).toEqual([2000]);
    await q.shutDown();
  });

  it('shutDown leaves no timer, takes no more keys, and waits for running handlers', async () => {
    const q = new WorkQueue();
    const g = gated();
    const w = q.writer('x', { handle: g.handle });
    w.add('a');
    w.addAfter('b', 10_000);
    await flush();
    expect(vi.getTimerCount()).toBe(1);
    let down = false;
    const stopped = q.shutDown().then(() => (down = true));
    expect(vi.getTimerCount()).toBe(0);
    await flush();
    expect(down).toBe(false); // 'a' still runs
    g.pending.shift()!.reject(new Error('late failure'));
    await stopped;
    expect(vi.getTimerCount()).toBe(0); // its failure schedules no retry
    w.add('c');
    await vi.advanceTimersByTimeAsync(20_000);
    expect(g.calls).toEqual(['a']);
  });
});
