import { describe, expect, it } from 'vitest';
import type { KubeClient, Query } from './client.js';
import { KubeApiError } from './errors.js';
import { migrateStorage } from './storage-migration.js';

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.com';
const fail = (method: string, path: string, code: number, reason: string) =>
  new KubeApiError(method, path, { code, reason, message: reason });

/** An API server of one CRD and its objects, with scripted conflicts and an expiring list. */
function fakeKube(opts: {
  names: string[];
  conflicts?: Record<string, number>;
  expireOnce?: boolean;
}) {
  const objects = new Map(
    opts.names.map((n, i) => [
      n,
      { metadata: { name: n, namespace: 'ns', resourceVersion: String(i + 1) } },
    ]),
  );
  const conflicts = { ...opts.conflicts };
  let rv = 100;
  let expire = opts.expireOnce ?? false;
  const crd = {
    metadata: { name: 'things.example.com', resourceVersion: '1' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'things' },
      versions: [
        { name: 'v1', storage: false },
        { name: 'v2', storage: true },
      ],
    },
    status: { storedVersions: ['v1', 'v2'] },
  };
  const puts: string[] = [];
  const kube = {
    async get(path: string) {
      if (path === CRD_PATH) return structuredClone(crd);
      const o = objects.get(path.split('/').pop()!);
      if (!o) throw fail('GET', path, 404, 'NotFound');
      return structuredClone(o);
    },
    async list(path: string, q: Query) {
      expect(path).toBe('/apis/example.com/v2/things');
      const names = [...objects.keys()].sort();
      const from = q.continue ? names.indexOf(String(q.continue)) : 0;
      if (q.continue && expire) {
        expire = false;
        throw fail('GET', path, 410, 'Expired');
      }
      const page = names.slice(from, from + Number(q.limit));
      const next = names[from + Number(q.limit)];
      return {
        metadata: next
          ? { continue: next, remainingItemCount: names.length - from - page.length }
          : {},
        items: page.map((n) => structuredClone(objects.get(n)!)),
      };
    },
    async request(method: string, path: string, { body }: { body: any }) {
      expect(method).toBe('PUT');
      expect(path).toBe(`/apis/example.com/v2/namespaces/ns/things/${body.metadata.name}`);
      const cur = objects.get(body.metadata.name);
      if (!cur) throw fail(method, path, 404, 'NotFound');
      if (conflicts[body.metadata.name]) {
        conflicts[body.metadata.name]!--;
        cur.metadata.resourceVersion = String(++rv); // someone else wrote it
      }
      if (body.metadata.resourceVersion !== cur.metadata.resourceVersion)
        throw fail(method, path, 409, 'Conflict');
      cur.metadata.resourceVersion = String(++rv);
      puts.push(body.metadata.name);
      return cur;
    },
    async patch(path: string, ops: any[]) {
      expect(path).toBe(`${CRD_PATH}/status`);
      expect(ops).toEqual([
        { op: 'test', path: '/metadata/resourceVersion', value: '1' },
        { op: 'replace', path: '/status/storedVersions', value: ['v2'] },
      ]);
      crd.status.storedVersions = ops[1].value;
      return crd;
    },
  };
  return { kube: kube as unknown as KubeClient, puts, objects, crd };
}

describe('migrateStorage', () => {
  it('rewrites every object page by page, retries a conflict on a fresh read, then trims storedVersions', async () => {
    const f = fakeKube({ names: ['a', 'b', 'c', 'd', 'e'], conflicts: { c: 2 } });
    const lines: string[] = [];
    const r = await migrateStorage(f.kube, 'things.example.com', {
      pageSize: 2,
      progress: (l) => lines.push(l),
    });
    expect(r).toEqual({
      storageVersion: 'v2',
      rewritten: 5,
      conflicts: 2,
      gone: 0,
      storedVersions: { before: ['v1', 'v2'], after: ['v2'] },
    });
    expect(f.puts.sort()).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(lines).toEqual([
      'things.example.com: rewriting every object in storage version v2 (status.storedVersions: [v1, v2])',
      'things.example.com: page 1: 2 rewritten, about 3 to go',
      'things.example.com: page 2: 4 rewritten, 2 conflicts retried, about 1 to go',
      'things.example.com: page 3: 5 rewritten, 2 conflicts retried',
      'things.example.com: status.storedVersions: [v1, v2] → [v2]',
    ]);
  });

  it('lists again from the start when the continue token expires (410)', async () => {
    const f = fakeKube({ names: ['a', 'b', 'c'], expireOnce: true });
    const lines: string[] = [];
    const r = await migrateStorage(f.kube, 'things.example.com', {
      pageSize: 2,
      progress: (l) => lines.push(l),
    });
    expect(r.rewritten).toBe(5); // a and b twice: writing them again changes nothing
    expect(lines).toContain(
      'things.example.com: the list expired (410 Gone); listing again from the start',
    );
    expect(f.crd.status.storedVersions).toEqual(['v2']);
  });

  it('gives up after five conflicts in a row, without trimming', async () => {
    const f = fakeKube({ names: ['a'], conflicts: { a: 5 } });
    await expect(migrateStorage(f.kube, 'things.example.com')).rejects.toThrow(/409 Conflict/);
    expect(f.crd.status.storedVersions).toEqual(['v1', 'v2']);
  });

  it('names an unknown CRD', async () => {
    const f = fakeKube({ names: [] });
    await expect(migrateStorage(f.kube, 'nopes.example.com')).rejects.toThrow(
      /^unknown CRD "nopes.example.com"/,
    );
  });
});
