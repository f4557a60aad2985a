// Storage-version migration of a CRD, as kube-storage-version-migrator does it: every
// stored object is read in the current storage version and written back unchanged (the
// API server then encodes it in that version), page by page, retrying a write that lost
// a race by re-reading the object; once all are rewritten, status.storedVersions is
// trimmed to the storage version, so that older versions can be removed from the CRD.
import { KubeApiError } from './errors.js';
import type { KubeClient } from './client.js';

/** A CRD that cannot be migrated as it stands (unknown, or changed meanwhile). */
export class MigrationError extends Error {}

interface Crd {
  metadata: { name: string; resourceVersion: string };
  spec: {
    group: string;
    scope: 'Namespaced' | 'Cluster';
    names: { plural: string };
    versions: { name: string; storage: boolean }[];
  };
  status?: { storedVersions?: string[] };
}

interface Stored {
  metadata: { name: string; namespace?: string; resourceVersion?: string };
}

export interface MigrateOptions {
  /** Objects per list page (`limit`). */
  pageSize?: number;
  /** Writes in flight at once. */
  concurrency?: number;
  /** One line per step: the CRD, each page, the trim. */
  progress?: (line: string) => void;
}

export interface MigrateResult {
  storageVersion: string;
  /** Objects written back in the storage version. */
  rewritten: number;
  /** Writes that lost a race and were retried on a fresh read. */
  conflicts: number;
  /** Objects deleted between the list and their write. */
  gone: number;
  storedVersions: { before: string[]; after: string[] };
}

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const MAX_ATTEMPTS = 5;

async function getCrd(kube: KubeClient, name: string): Promise<Crd> {
  try {
    return await kube.get<Crd>(`${CRDS}/${encodeURIComponent(name)}`);
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404)
      throw new MigrationError(
        `unknown CRD "${name}" (a CustomResourceDefinition name, as \`kubectl get crds\` lists them)`,
      );
    throw e;
  }
}

const storageOf = (crd: Crd): string => {
  const v = crd.spec.versions.find((x) => x.storage);
  if (!v) throw new MigrationError(`CRD ${crd.metadata.name} has no storage version`);
  return v.name;
};

export async function migrateStorage(
  kube: KubeClient,
  name: string,
  opts: MigrateOptions = {},
): Promise<MigrateResult> {
  const say = opts.progress ?? (() => {});
  const pageSize = opts.pageSize ?? 500;
  const crd = await getCrd(kube, name);
  const storage = storageOf(crd);
  const before = crd.status?.storedVersions ?? [];
  const { group, names, scope } = crd.spec;
  const collection = `/apis/${group}/${storage}/${names.plural}`;
  const itemPath = (o: Stored) =>
    scope === 'Namespaced'
      ? `/apis/${group}/${storage}/namespaces/${encodeURIComponent(o.metadata.namespace ?? '')}/${names.plural}/${encodeURIComponent(o.metadata.name)}`
      : `${collection}/${encodeURIComponent(o.metadata.name)}`;
  say(
    `${name}: rewriting every object in storage version ${storage} (status.storedVersions: [${before.join(', ')}])`,
  );

  const result = { rewritten: 0, conflicts: 0, gone: 0 };
  /** PUT the object as read; on 409 read it again and retry; gone is fine. */
  const rewrite = async (first: Stored) => {
    let cur: Stored = first;
    for (let attempt = 1; ; attempt++) {
      try {
        await kube.request('PUT', itemPath(cur), { body: cur });
        result.rewritten++;
        return;
      } catch (e) {
        if (!(e instanceof KubeApiError)) throw e;
        if (e.code === 404) {
          result.gone++;
          return;
        }
        if (e.code !== 409 || attempt >= MAX_ATTEMPTS) throw e;
        result.conflicts++;
        try {
          cur = await kube.get<Stored>(itemPath(cur));
        } catch (g) {
          if (g instanceof KubeApiError && g.code === 404) {
            result.gone++;
            return;
          }
          throw g;
        }
      }
    }
  };

  let cont: string | undefined;
  let page = 0;
  for (;;) {
    let list;
    try {
      list = await kube.list<Stored>(collection, { limit: pageSize, continue: cont });
    } catch (e) {
      // The continue token expired (etcd compacted past it): start again. Objects already
      // rewritten are written again, which changes nothing.
      if (e instanceof KubeApiError && e.code === 410 && cont) {
        say(`${name}: the list expired (410 Gone); listing again from the start`);
        cont = undefined;
        continue;
      }
      throw e;
    }
    await pool(list.items, opts.concurrency ?? 8, rewrite);
    cont = list.metadata.continue || undefined;
    page++;
    const left = list.metadata.remainingItemCount;
    say(
      `${name}: page ${page}: ${result.rewritten} rewritten` +
        (result.conflicts ? `, ${result.conflicts} conflicts retried` : '') +
        (result.gone ? `, ${result.gone} deleted meanwhile` : '') +
        (left ? `, about ${left} to go` : ''),
    );
    if (!cont) break;
  }

  const after = await trimStoredVersions(kube, name, storage);
  say(`${name}: status.storedVersions: [${before.join(', ')}] → [${after.join(', ')}]`);
  return { storageVersion: storage, ...result, storedVersions: { before, after } };
}

/**
 * Sets status.storedVersions to the storage version, guarded by the CRD's
 * resourceVersion: if the storage version moved while we rewrote, the objects written
 * before the move are not all in it, and trimming would lie.
 */
async function trimStoredVersions(kube: KubeClient, name: string, storage: string) {
  for (let attempt = 1; ; attempt++) {
    const crd = await getCrd(kube, name);
    const now = storageOf(crd);
    if (now !== storage)
      throw new MigrationError(
        `the storage version of ${name} changed from ${storage} to ${now} during the migration: run it again`,
      );
    const stored = crd.status?.storedVersions ?? [];
    if (stored.length === 1 && stored[0] === storage) return stored;
    try {
      await kube.patch(
        `${CRDS}/${encodeURIComponent(name)}/status`,
        [
          { op: 'test', path: '/metadata/resourceVersion', value: crd.metadata.resourceVersion },
          { op: 'replace', path: '/status/storedVersions', value: [storage] },
        ],
        'json',
        { fieldManager: 'annex' },
      );
      return [storage];
    } catch (e) {
      const moved = e instanceof KubeApiError && (e.code === 409 || e.code === 422);
      if (!moved || attempt >= MAX_ATTEMPTS) throw e;
    }
  }
}

/** Runs `work` over `items`, at most `n` at once; the first failure stops it. */
async function pool<T>(items: T[], n: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(lanes);
}
