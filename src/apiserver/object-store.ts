// A Provider over objects you put in: the store stamps resourceVersions, keeps a bounded
// watch history (410 Expired past it, as the watch cache), and hands out objects that are
// never mutated afterwards (the framework caches their JSON by identity).
import type { KubeObject, Provider, Snapshot, WatchEvent } from '../core/types.js';
import { WatchHistory } from './watch-history.js';

const keyOf = (o: KubeObject) => `${o.metadata.namespace ?? ''}/${o.metadata.name}`;

export class ObjectStore implements Provider {
  private readonly objects = new Map<string, KubeObject>();
  /** The JSON each object was stored from, to skip updates that change nothing. */
  private readonly seen = new Map<string, string>();
  private rv = 0;
  private readonly history: WatchHistory;

  constructor(opts: { historyLimit?: number } = {}) {
    this.history = new WatchHistory(opts.historyLimit ?? 1000);
  }

  /** Adds or replaces the object with its namespace/name; unchanged objects emit nothing. */
  set(object: KubeObject): void {
    const key = keyOf(object);
    const json = JSON.stringify(object);
    if (this.seen.get(key) === json) return;
    const type = this.objects.has(key) ? 'MODIFIED' : 'ADDED';
    const rv = ++this.rv;
    const stored = { ...object, metadata: { ...object.metadata, resourceVersion: String(rv) } };
    this.objects.set(key, stored);
    this.seen.set(key, json);
    this.history.append(rv, { type, object: stored });
  }

  delete(namespace: string | undefined, name: string): void {
    const key = `${namespace ?? ''}/${name}`;
    const old = this.objects.get(key);
    if (!old) return;
    this.objects.delete(key);
    this.seen.delete(key);
    const rv = ++this.rv;
    const object = { ...old, metadata: { ...old.metadata, resourceVersion: String(rv) } };
    this.history.append(rv, { type: 'DELETED', object });
  }

  /** Makes the store hold exactly `objects` (a relist), emitting only the differences. */
  replace(objects: KubeObject[]): void {
    const keep = new Set(objects.map(keyOf));
    for (const o of [...this.objects.values()]) {
      if (!keep.has(keyOf(o))) this.delete(o.metadata.namespace, o.metadata.name);
    }
    for (const o of objects) this.set(o);
  }

  get size(): number {
    return this.objects.size;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  snapshot(): Snapshot {
    return { resourceVersion: String(this.rv), items: [...this.objects.values()] };
  }

  subscribe(
    resourceVersion: string,
    onEvent: (event: WatchEvent, resourceVersion: string) => void,
  ): () => void {
    return this.history.subscribe(resourceVersion, onEvent);
  }
}
