import { describe, expect, it } from 'vitest';
import { SnapshotStore } from './paging.js';
import { tooOldResourceVersion } from '../core/status.js';
import type { KubeObject, Provider, WatchEvent } from '../core/types.js';
import { startWatch, watchParamsOf, type WatchSetup } from './watch.js';

/** An in-memory provider with a replayable change history (test double). */
class MemProvider implements Provider {
  rv = 10;
  oldest = 10;
  objects = new Map<string, KubeObject>();
  history: { rv: number; ev: WatchEvent }[] = [];
  listeners = new Set<(e: WatchEvent, rv: string) => void>();
  set(name: string, labels: Record<string, string> = {}): void {
    const type = this.objects.has(name) ? 'MODIFIED' : 'ADDED';
    this.rv++;
    const o = { metadata: { name, labels, resourceVersion: String(this.rv) } };
    this.objects.set(name, o);
    this.emit({ type, object: o });
  }
  remove(name: string): void {
    const o = this.objects.get(name)!;
    this.objects.delete(name);
    this.rv++;
    this.emit({ type: 'DELETED', object: o });
  }
  private emit(ev: WatchEvent) {
    this.history.push({ rv: this.rv, ev });
    for (const l of this.listeners) l(ev, String(this.rv));
  }
  snapshot() {
    return { resourceVersion: String(this.rv), items: [...this.objects.values()] };
  }
  subscribe(from: string, cb: (e: WatchEvent, rv: string) => void) {
    if (Number(from) < this.oldest) throw tooOldResourceVersion(from, String(this.oldest));
    for (const h of this.history) if (h.rv > Number(from)) cb(h.ev, String(h.rv));
    this.listeners.add(cb);
    return () => this.listeners.delete(cb);
  }
}

function setup(p: MemProvider, query: string, over: Partial<WatchSetup> = {}): WatchSetup {
  return {
    store: new SnapshotStore(p),
    provider: p,
    params: watchParamsOf(new URLSearchParams(query)),
    match: () => true,
    filtered: false,
    encode: (o) => o,
    bookmark: (rv, annotations) => ({
      kind: 'X',
      metadata: { resourceVersion: rv, ...(annotations ? { annotations } : {}) },
    }),
    bookmarkIntervalMs: 60_000,
    minRequestTimeoutSeconds: 1800,
    maxBufferedBytes: 1 << 20,
    ...over,
  };
}

async function collect(
  stream: NodeJS.ReadableStream,
): Promise<{ type: string; object: Record<string, unknown> }[]> {
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { type: string; object: Record<string, unknown> });
}

const names = (evs: { type: string; object: Record<string, unknown> }[]) =>
  evs.map(
    (e) =>
      `${e.type} ${(e.object.metadata as { name?: string; resourceVersion?: string }).name ?? (e.object.metadata as { resourceVersion: string }).resourceVersion}`,
  );

describe('watchParamsOf', () => {
  it('accepts the watch-list form and rejects its incomplete variants with 422', () => {
    expect(
      watchParamsOf(
        new URLSearchParams(
          'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
        ),
      ).sendInitialEvents,
    ).toBe(true);
    expect(() =>
      watchParamsOf(new URLSearchParams('sendInitialEvents=true&allowWatchBookmarks=true')),
    ).toThrow(
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
    );
    expect(() =>
      watchParamsOf(
        new URLSearchParams('sendInitialEvents=true&resourceVersionMatch=NotOlderThan'),
      ),
    ).toThrow(/allowWatchBookmarks/);
    expect(() => watchParamsOf(new URLSearchParams('resourceVersionMatch=Exact'))).toThrow(
      /forbidden for watch/,
    );
    expect(() => watchParamsOf(new URLSearchParams('timeoutSeconds=x'))).toThrow(/invalid syntax/);
  });
});

describe('startWatch', () => {
  it('from resourceVersion 0 sends the current state as ADDED, then live changes, until timeoutSeconds', async () => {
    const p = new MemProvider();
    p.set('a');
    p.set('b');
    const w = await startWatch(setup(p, 'resourceVersion=0&timeoutSeconds=1'));
    p.set('a');
    p.remove('b');
    const evs = await collect(w.stream);
    expect(names(evs)).toEqual(['ADDED a', 'ADDED b', 'MODIFIED a', 'DELETED b']);
    expect(p.listeners.size).toBe(0);
  });

  it('from a resourceVersion replays only later changes', async () => {
    const p = new MemProvider();
    p.set('a');
    const rv = String(p.rv);
    p.set('b');
    const w = await startWatch(setup(p, `resourceVersion=${rv}`));
    w.close();
    expect(names(await collect(w.stream))).toEqual(['ADDED b']);
  });

  it('too old a resourceVersion gives one ERROR event with a 410 Expired Status', async () => {
    const p = new MemProvider();
    p.oldest = 12;
    const w = await startWatch(setup(p, 'resourceVersion=3'));
    const evs = await collect(w.stream);
    expect(evs).toEqual([
      {
        type: 'ERROR',
        object: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'too old resource version: 3 (12)',
          reason: 'Expired',
          code: 410,
        },
      },
    ]);
  });

  it('turns selection changes into ADDED/DELETED for filtered watches', async () => {
    const p = new MemProvider();
    p.set('a', { app: 'web' });
    p.set('b', { app: 'db' });
    const match = (o: KubeObject) => o.metadata.labels?.app === 'web';
    const w = await startWatch(setup(p, '', { match, filtered: true }));
    p.set('b', { app: 'web' }); // enters the selection
    p.set('a', { app: 'db' }); // leaves it
    p.set('a', { app: 'db', x: '1' }); // invisible change
    p.remove('b');
    w.close();
    expect(names(await collect(w.stream))).toEqual([
      'ADDED a',
      'ADDED b',
      'DELETED a',
      'DELETED b',
    ]);
  });

  it('watch-list ends the initial events with an initial-events-end bookmark, and sends periodic bookmarks', async () => {
    const p = new MemProvider();
    p.set('a');
    const w = await startWatch(
      setup(
        p,
        'sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
        { bookmarkIntervalMs: 30 },
      ),
    );
    await new Promise((r) => setTimeout(r, 80));
    w.close();
    const evs = await collect(w.stream);
    expect(evs[0]!.type).toBe('ADDED');
    expect(evs[1]).toEqual({
      type: 'BOOKMARK',
      object: {
        kind: 'X',
        metadata: { resourceVersion: '11', annotations: { 'k8s.io/initial-events-end': 'true' } },
      },
    });
    expect(evs.slice(2).length).toBeGreaterThanOrEqual(1);
    expect(evs.slice(2).every((e) => e.type === 'BOOKMARK')).toBe(true);
  });

  it('cuts off a client that stops reading', async () => {
    const p = new MemProvider();
    const w = await startWatch(setup(p, '', { maxBufferedBytes: 1000 }));
    for (let i = 0; i < 100; i++) p.set(`object-${i}`);
    expect(p.listeners.size).toBe(0);
    const evs = await collect(w.stream);
    expect(evs.length).toBeLessThan(100);
  });
});

describe('startWatch on server shutdown', () => {
  it('ends the stream normally when the stop signal fires, and unsubscribes', async () => {
    const p = new MemProvider();
    p.set('a');
    const stop = new AbortController();
    const w = await startWatch(setup(p, 'watch=true', { stop: stop.signal }));
    const events = collect(w.stream);
    p.set('b');
    stop.abort();
    p.set('c'); // after the stop: not sent
    expect(names(await events)).toEqual(['ADDED a', 'ADDED b']);
    expect(p.listeners.size).toBe(0);
  });

  it('ends at once when shutdown began before the watch started', async () => {
    const p = new MemProvider();
    p.set('a');
    const stop = new AbortController();
    stop.abort();
    const w = await startWatch(setup(p, 'watch=true', { stop: stop.signal }));
    expect(names(await collect(w.stream))).toEqual(['ADDED a']);
  });
});
