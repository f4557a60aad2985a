// Informer-style caches of the kinds the policies match: one list+watch (kube/reflector.ts)
// per group/version/resource, across namespaces, started when a policy first matches the
// kind and stopped when none does. Objects are kept without managedFields (the largest
// part of most objects, and nothing a policy reads); read-only.
import type { KubeObject } from '../core/types.js';
import { KubeApiError, type KubeClient } from '../kube/client.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import { kindKey, type ScanKind } from './scan.js';

export type CacheEvent =
  | { type: 'synced'; kind: ScanKind }
  | { type: 'changed' | 'deleted'; kind: ScanKind; object: KubeObject };

interface Cache {
  kind: ScanKind;
  objects: Map<string, KubeObject>;
  synced: boolean;
  /** Why the last list or watch failed ('' once it works again). */
  error: string;
  stop: () => void;
}

const objectKey = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

function trimmed(o: KubeObject): KubeObject {
  if (!o.metadata.managedFields) return o;
  const metadata = { ...o.metadata };
  delete metadata.managedFields;
  return { ...o, metadata };
}

export interface CacheSize {
  /** `pods`, `apps/deployments`. */
  resource: string;
  objects: number;
  /** Listed at least once. */
  synced: boolean;
  /** Why its list or watch fails now ('forbidden': RBAC), or ''. */
  error: string;
}

export const listPath = (k: ScanKind) =>
  k.group ? `/apis/${k.group}/${k.version}/${k.resource}` : `/api/${k.version}/${k.resource}`;

export class KindCaches {
  private readonly caches = new Map<string, Cache>();

  constructor(
    private readonly kube: KubeClient,
    private readonly log: Logger,
    private readonly onEvent: (e: CacheEvent) => void,
  ) {}

  /** Watches exactly `kinds`: starts the new ones, stops and forgets the rest. */
  sync(kinds: readonly ScanKind[]): void {
    const want = new Map(kinds.map((k) => [kindKey(k), k]));
    for (const [key, c] of this.caches) {
      if (want.has(key)) continue;
      c.stop();
      this.caches.delete(key);
      this.log.info({ resource: key }, 'scan cache stopped');
    }
    for (const [key, kind] of want) if (!this.caches.has(key)) this.start(key, kind);
  }

  private start(key: string, kind: ScanKind): void {
    const cache: Cache = { kind, objects: new Map(), synced: false, error: '', stop: () => {} };
    this.caches.set(key, cache);
    cache.stop = startWatch<KubeObject>(
      this.kube,
      listPath(kind),
      {},
      (e) => {
        cache.error = '';
        if (e.type === 'BOOKMARK') return;
        if (e.type === 'RELISTED') {
          cache.objects = new Map(e.items.map((o) => [objectKey(o), trimmed(o)]));
          cache.synced = true;
          this.onEvent({ type: 'synced', kind });
        } else if (e.type === 'DELETED') {
          cache.objects.delete(objectKey(e.object));
          this.onEvent({ type: 'deleted', kind, object: e.object });
        } else {
          const o = trimmed(e.object);
          cache.objects.set(objectKey(o), o);
          this.onEvent({ type: 'changed', kind, object: o });
        }
      },
      (err) => {
        // A kind annex may not list (RBAC) stays unsynced: /readyz?verbose says why.
        const forbidden = err instanceof KubeApiError && err.code === 403;
        cache.error = forbidden ? 'forbidden' : err.message.slice(0, 160);
        this.log.warn({ resource: key, error: err.message }, 'scan cache watch failed; retrying');
      },
    );
    this.log.info({ resource: key }, 'scan cache started');
  }

  /** Every cached object of every synced kind. */
  *entries(): Iterable<[ScanKind, KubeObject]> {
    for (const c of this.caches.values()) {
      if (!c.synced) continue;
      for (const o of c.objects.values()) yield [c.kind, o];
    }
  }

  /** Objects per kind (`pods 12`, `apps/deployments 3`), and the kinds not listed yet. */
  sizes(): CacheSize[] {
    return [...this.caches.values()].map((c) => ({
      resource: c.kind.group ? `${c.kind.group}/${c.kind.resource}` : c.kind.resource,
      objects: c.objects.size,
      synced: c.synced,
      error: c.error,
    }));
  }

  stop(): void {
    for (const c of this.caches.values()) c.stop();
    this.caches.clear();
  }
}
