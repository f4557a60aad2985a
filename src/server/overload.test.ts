import type Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { fairShare, type Priority } from './overload.js';

const limits = { review: 4, discovery: 4, watch: 4, requests: 4 };

/** A request of `user` in `priority`, held in flight until `done` is called. */
function request(mw: Koa.Middleware, user: string, priority: Priority = 'discovery') {
  let done!: () => void;
  const held = new Promise<void>((r) => (done = r));
  const headers: Record<string, string> = {};
  const ctx = {
    state: { priority, user: { name: user } },
    status: 200,
    body: undefined as unknown,
    set: (k: string, v: string) => (headers[k] = v),
    res: { once: () => {} },
  } as unknown as Koa.Context;
  let admitted = false;
  const finished = mw(ctx, async () => {
    admitted = true;
    await held;
  });
  return { ctx, headers, done, finished, admitted: () => admitted };
}

describe('fairShare', () => {
  it('lets a lone caller use the whole bound', () => {
    const mw = fairShare(limits);
    const all = Array.from({ length: 4 }, () => request(mw, 'flood'));
    expect(all.map((r) => r.admitted())).toEqual([true, true, true, true]);
  });

  it('keeps a flooding caller to its share once another caller holds a slot', async () => {
    const mw = fairShare(limits);
    const first = [request(mw, 'flood'), request(mw, 'flood')];
    const other = request(mw, 'alice');
    // Two callers: ceil(4 / 2) = 2 each; the flooder already holds 2.
    const third = request(mw, 'flood');
    expect(first.map((r) => r.admitted())).toEqual([true, true]);
    expect(other.admitted()).toBe(true);
    expect(third.admitted()).toBe(false);
    expect(third.ctx.status).toBe(429);
    expect(third.headers['Retry-After']).toBe('1');
    expect(JSON.parse(third.ctx.body as string)).toMatchObject({ kind: 'Status', code: 429 });
    // Alice finishes: the flooder has the whole bound again.
    other.done();
    await other.finished;
    expect(request(mw, 'flood').admitted()).toBe(true);
  });

  it('leaves reviews (one caller, the API server) and unauthenticated paths to the class bound', () => {
    const mw = fairShare(limits);
    request(mw, 'alice', 'review');
    const reviews = Array.from({ length: 4 }, () => request(mw, 'apiserver', 'review'));
    expect(reviews.every((r) => r.admitted())).toBe(true);
  });
});
