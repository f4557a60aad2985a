import { describe, expect, it } from 'vitest';
import { ObjectStore } from './object-store.js';
import type { WatchEvent } from '../core/types.js';

const obj = (name: string, extra: object = {}) => ({
  metadata: { name, namespace: 'ns' },
  ...extra,
});

describe('ObjectStore', () => {
  it('stamps resourceVersions and emits only real changes', () => {
    const s = new ObjectStore();
    const events: [string, string, string][] = [];
    s.subscribe('0', (e: WatchEvent, rv) => events.push([e.type, e.object.metadata.name, rv]));
    s.set(obj('a', { n: 1 }));
    s.set(obj('a', { n: 1 })); // unchanged: nothing
    s.set(obj('a', { n: 2 }));
    s.set(obj('b'));
    s.delete('ns', 'a');
    s.delete('ns', 'missing');
    expect(events).toEqual([
      ['ADDED', 'a', '1'],
      ['MODIFIED', 'a', '2'],
      ['ADDED', 'b', '3'],
      ['DELETED', 'a', '4'],
    ]);
    const snap = s.snapshot();
    expect(snap.resourceVersion).toBe('4');
    expect(snap.items.map((o) => [o.metadata.name, o.metadata.resourceVersion])).toEqual([
      ['b', '3'],
    ]);
  });

  it('replace() is a relist: adds, updates and deletes to reach exactly the given set', () => {
    const s = new ObjectStore();
    s.replace([obj('a'), obj('b')]);
    const seen: string[] = [];
    s.subscribe(s.resourceVersion, (e) => seen.push(`${e.type} ${e.object.metadata.name}`));
    s.replace([obj('b', { x: 1 }), obj('c')]);
    expect(seen).toEqual(['DELETED a', 'MODIFIED b', 'ADDED c']);
    expect(s.size).toBe(2);
  });

  it('never mutates an object it handed out', () => {
    const s = new ObjectStore();
    s.set(obj('a', { n: 1 }));
    const first = s.snapshot().items[0]!;
    s.set(obj('a', { n: 2 }));
    expect(first).toMatchObject({ n: 1, metadata: { resourceVersion: '1' } });
  });

  it('answers 410 Expired for a watch older than its history', () => {
    const s = new ObjectStore({ historyLimit: 2 });
    for (let i = 0; i < 10; i++) s.set(obj(`o${i}`));
    expect(() => s.subscribe('1', () => {})).toThrow(/too old resource version/);
  });
});
