import { describe, expect, it } from 'vitest';
import { StatusError } from '../core/status.js';
import type { KubeObject, Provider, Snapshot } from '../core/types.js';
import {
  decodeContinue,
  encodeContinue,
  listRequestOf,
  page,
  SnapshotStore,
  snapshotFor,
  sortSnapshot,
} from './paging.js';

const obj = (ns: string, name: string, labels: Record<string, string> = {}): KubeObject => ({
  metadata: { name, ...(ns ? { namespace: ns } : {}), labels },
});

class FakeProvider implements Provider {
  current: Snapshot = { resourceVersion: '1', items: [] };
  calls = 0;
  snapshot(): Snapshot {
    this.calls++;
    return this.current;
  }
}

function statusOf(e: unknown) {
  expect(e).toBeInstanceOf(StatusError);
  return (e as StatusError).status;
}

describe('continue tokens', () => {
  it('encode like kube-apiserver (base64url JSON without padding)', () => {
    const t = encodeContinue(94137, 'carton-3\u0000');
    expect(Buffer.from(t, 'base64url').toString()).toBe(
      '{"v":"meta.k8s.io/v1","rv":94137,"start":"/carton-3\\u0000"}',
    );
    expect(t).not.toContain('=');
    expect(decodeContinue(t)).toEqual({ rv: 94137, start: 'carton-3\u0000' });
  });

  it.each([
    ['!!!', 'invalid continue token: continue key is not valid: illegal base64 data'],
    [
      Buffer.from('nope').toString('base64url'),
      'invalid continue token: continue key is not valid: invalid JSON',
    ],
    [
      Buffer.from('{"v":"x","rv":1,"start":"/a"}').toString('base64url'),
      'invalid continue token: continue key is not valid: server does not recognize this encoded version x',
    ],
    [
      Buffer.from('{"v":"meta.k8s.io/v1","rv":0,"start":"/a"}').toString('base64url'),
      'invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)',
    ],
    [
      Buffer.from('{"v":"meta.k8s.io/v1","rv":3,"start":""}').toString('base64url'),
      'invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)',
    ],
  ])('rejects %j with 400', (tok, message) => {
    try {
      decodeContinue(tok);
      expect.unreachable();
    } catch (e) {
      expect(statusOf(e)).toMatchObject({ code: 400, reason: 'BadRequest', message });
    }
  });
});

describe('listRequestOf', () => {
  it('parses limit and rejects garbage', () => {
    expect(listRequestOf(new URLSearchParams('limit=3&continue=x')).limit).toBe(3);
    expect(() => listRequestOf(new URLSearchParams('limit=abc'))).toThrow(/invalid syntax/);
  });
});

describe('page', () => {
  const items = [
    obj('b', 'x'),
    obj('a', 'z'),
    obj('a', 'y', { keep: '1' }),
    obj('c', 'w', { keep: '1' }),
  ];
  const snap = sortSnapshot('42', items, 0);

  it('sorts by namespace/name', () => {
    expect(snap.keys).toEqual(['a/y', 'a/z', 'b/x', 'c/w']);
  });

  it('walks all items page by page with remainingItemCount', () => {
    const p1 = page(snap, '', 3, () => true, false);
    expect(p1.items.map((o) => o.metadata.name)).toEqual(['y', 'z', 'x']);
    expect(p1.remainingItemCount).toBe(1);
    const tok = decodeContinue(p1.continue!);
    expect(tok).toEqual({ rv: 42, start: 'b/x\u0000' });
    const p2 = page(snap, tok.start, 3, () => true, false);
    expect(p2.items.map((o) => o.metadata.name)).toEqual(['w']);
    expect(p2.continue).toBeUndefined();
    expect(p2.remainingItemCount).toBeUndefined();
  });

  it('filters before counting the limit and omits remainingItemCount when filtered', () => {
    const keep = (o: KubeObject) => o.metadata.labels?.keep === '1';
    const p1 = page(snap, '', 1, keep, true);
    expect(p1.items.map((o) => o.metadata.name)).toEqual(['y']);
    expect(p1.continue).toBeDefined();
    expect(p1.remainingItemCount).toBeUndefined();
    const p2 = page(snap, decodeContinue(p1.continue!).start, 1, keep, true);
    expect(p2.items.map((o) => o.metadata.name)).toEqual(['w']);
    expect(p2.continue).toBeUndefined();
  });

  it('no limit returns everything without continue', () => {
    const p = page(snap, '', 0, () => true, false);
    expect(p.items).toHaveLength(4);
    expect(p.continue).toBeUndefined();
  });
});

describe('SnapshotStore and snapshotFor', () => {
  it('serves later pages from the first page snapshot even after the data moved on', async () => {
    const prov = new FakeProvider();
    prov.current = { resourceVersion: '5', items: [obj('', 'a'), obj('', 'b'), obj('', 'c')] };
    const store = new SnapshotStore(prov);
    const first = await snapshotFor(store, listRequestOf(new URLSearchParams('limit=2')));
    const p1 = page(first.snap, first.start, 2, () => true, false);
    prov.current = { resourceVersion: '6', items: [obj('', 'a'), obj('', 'bb'), obj('', 'd')] };
    const next = await snapshotFor(
      store,
      listRequestOf(new URLSearchParams(`limit=2&continue=${p1.continue}`)),
    );
    const p2 = page(next.snap, next.start, 2, () => true, false);
    expect(p2.resourceVersion).toBe('5');
    expect(p2.items.map((o) => o.metadata.name)).toEqual(['c']);
  });

  it('answers 410 Expired with an rv -1 token once the snapshot is evicted, and that token resumes on current data', async () => {
    let now = 0;
    const prov = new FakeProvider();
    prov.current = { resourceVersion: '5', items: [obj('', 'a'), obj('', 'b'), obj('', 'c')] };
    const store = new SnapshotStore(prov, { maxAgeMs: 1000, now: () => now });
    const first = await snapshotFor(store, listRequestOf(new URLSearchParams('limit=1')));
    const p1 = page(first.snap, first.start, 1, () => true, false);
    now = 5000;
    prov.current = {
      resourceVersion: '9',
      items: [obj('', 'a'), obj('', 'b'), obj('', 'c'), obj('', 'd')],
    };
    let next = '';
    try {
      await snapshotFor(store, listRequestOf(new URLSearchParams(`continue=${p1.continue}`)));
      expect.unreachable();
    } catch (e) {
      const s = statusOf(e);
      expect(s.code).toBe(410);
      expect(s.reason).toBe('Expired');
      expect(s.message).toMatch(
        /^The provided continue parameter is too old to display a consistent list result\./,
      );
      next = s.metadata.continue!;
    }
    expect(decodeContinue(next)).toEqual({ rv: -1, start: 'a\u0000' });
    const resumed = await snapshotFor(
      store,
      listRequestOf(new URLSearchParams(`continue=${next}`)),
    );
    const p2 = page(resumed.snap, resumed.start, 0, () => true, false);
    expect(p2.resourceVersion).toBe('9');
    expect(p2.items.map((o) => o.metadata.name)).toEqual(['b', 'c', 'd']);
  });

  it('keeps at most maxSnapshots and sorts each resourceVersion once', async () => {
    const prov = new FakeProvider();
    const store = new SnapshotStore(prov, { maxSnapshots: 2 });
    for (const rv of ['1', '2', '3']) {
      prov.current = { resourceVersion: rv, items: [] };
      await store.current();
    }
    expect(store.get('1')).toBeUndefined();
    expect(store.get('2')).toBeDefined();
    const a = await store.current();
    const b = await store.current();
    expect(a).toBe(b);
  });

  it('rejects resourceVersion with continue, and serves Exact from kept snapshots', async () => {
    const prov = new FakeProvider();
    prov.current = { resourceVersion: '3', items: [obj('', 'a')] };
    const store = new SnapshotStore(prov);
    await store.current();
    await expect(
      snapshotFor(
        store,
        listRequestOf(new URLSearchParams(`resourceVersion=3&continue=${encodeContinue(3, 'a')}`)),
      ),
    ).rejects.toThrow('specifying resource version is not allowed when using continue');
    prov.current = { resourceVersion: '4', items: [] };
    const exact = await snapshotFor(
      store,
      listRequestOf(new URLSearchParams('resourceVersion=3&resourceVersionMatch=Exact')),
    );
    expect(exact.snap.resourceVersion).toBe('3');
    await expect(
      snapshotFor(
        store,
        listRequestOf(new URLSearchParams('resourceVersion=1&resourceVersionMatch=Exact')),
      ),
    ).rejects.toThrow('The resourceVersion for the provided list is too old.');
  });
});
