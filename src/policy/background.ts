// Background scans, live: the kinds the policies match are cached (kind-caches.ts) and
// every cached object is evaluated (scan.ts, the webhook's evaluate()) on a policy change,
// on the object's own change, and every resyncSeconds; the results become one PolicyReport
// per namespace and one ClusterPolicyReport in two ObjectStores, which the aggregated API
// serves (report.ts). Nothing is written to the API server: every replica scans from its
// own caches, so no leader is needed and each serves the same reports.
import { ObjectStore } from '../apiserver/object-store.js';
import { gauge } from '../core/metric.js';
import type { KubeObject } from '../core/types.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import type { EvaluateContext } from './evaluate.js';
import { KindCaches, type CacheEvent, type CacheSize } from './kind-caches.js';
import { buildReport, type ObjectResults } from './report.js';
import { kindKey, scanKinds, scanObject, type ScanKind } from './scan.js';
import type { PolicyState } from './state.js';

const cachedObjects = gauge({
  name: 'annex_policy_scan_cached_objects',
  help: 'Objects held by the background scan caches, by resource.',
  labelNames: ['resource'],
});

/** What the scanner reads of the caches (kind-caches.ts). */
export type Caches = Pick<KindCaches, 'sync' | 'entries' | 'sizes' | 'stop'>;

export interface ScannerOptions {
  annexNamespace: string;
  /** Every object evaluated again this often, whatever changed. */
  resyncSeconds: number;
}

/** Report versions kept for watchers (see `namespaced`). */
const REPORT_HISTORY = 100;

/** The longest a scan runs before it lets the event loop answer reviews. */
const SLICE_MS = 10;

/** `12`; `12 (forbidden)` when its watch fails now; `not listed yet (forbidden)`. */
export function cacheState(s: CacheSize): string {
  const why = s.error === 'forbidden' ? 'forbidden: annex may not list or watch it' : s.error;
  const count = s.synced ? String(s.objects) : 'not listed yet';
  return why ? `${count} (${why})` : count;
}

/** Coalesces calls into one run after `ms`. */
function debounced(ms: number, run: () => void) {
  let timer: NodeJS.Timeout | undefined;
  const fn = () => {
    timer ??= setTimeout(() => {
      timer = undefined;
      run();
    }, ms);
  };
  fn.cancel = () => clearTimeout(timer);
  return fn;
}

export class BackgroundScanner {
  /**
   * PolicyReports (namespaced) and the ClusterPolicyReport (namespace ''). Their watch
   * history holds whole reports (a namespace's report is ~3 KB per object), so it is kept
   * short: a watcher that falls further behind gets 410 Expired and lists again.
   */
  readonly namespaced = new ObjectStore({ historyLimit: REPORT_HISTORY });
  readonly cluster = new ObjectStore({ historyLimit: REPORT_HISTORY });
  private caches: Caches | undefined;
  private log: Logger | undefined;
  /** By namespace ('' = cluster-scoped), by object key: each object's latest results. */
  private readonly results = new Map<string, Map<string, ObjectResults>>();
  private readonly dirty = new Set<string>();
  private readonly created = new Map<string, string>();
  private unscannable: string[] = [];
  private resync: NodeJS.Timeout | undefined;
  private readonly scanAllSoon = debounced(200, () => this.scanAll());
  private scanning: Promise<void> | undefined;
  private again = false;
  private readonly flushSoon = debounced(100, () => this.flush());

  constructor(
    private readonly state: PolicyState,
    private readonly opts: ScannerOptions,
  ) {}

  /** `caches`: the kinds' caches (tests give their own; default list+watch through `kube`). */
  start(
    kube: KubeClient,
    log: Logger,
    caches: (onEvent: (e: CacheEvent) => void) => Caches = (onEvent) =>
      new KindCaches(kube, this.log!, onEvent),
  ): void {
    this.log = log.child({ component: 'scan' });
    this.caches = caches((e) => this.onCache(e));
    this.resync = setInterval(() => this.scanAll(), this.opts.resyncSeconds * 1000);
    this.resync.unref();
    this.scanAllSoon();
  }

  stop(): void {
    clearInterval(this.resync);
    this.scanAllSoon.cancel();
    this.flushSoon.cancel();
    this.caches?.stop();
    this.caches = undefined;
  }

  /**
   * The policy set changed (the controller's watch), or a namespace's labels did (what a
   * namespaceSelector selects): watch what the policies match, scan again.
   */
  policiesChanged(): void {
    if (this.caches) this.scanAllSoon();
  }

  /** For /readyz?verbose: objects per cached kind, kinds not listed yet, rules not scannable. */
  report(): string | undefined {
    const sizes = this.caches?.sizes() ?? [];
    if (!sizes.length && !this.unscannable.length) return undefined;
    const kinds = sizes.map((s) => `${s.resource} ${cacheState(s)}`).join(', ');
    const not = this.unscannable.length
      ? `; not scanned: ${this.unscannable.slice(0, 5).join(', ')}${this.unscannable.length > 5 ? ` and ${this.unscannable.length - 5} more` : ''}`
      : '';
    return `scan caches: ${kinds || 'none'}${not}`;
  }

  private ctx(namespace: string): EvaluateContext {
    const labels = namespace ? this.state.namespaceLabels.get(namespace) : undefined;
    return {
      annexNamespace: this.opts.annexNamespace,
      exceptions: this.state.exceptions,
      ...(labels ? { namespaceLabels: labels } : {}),
    };
  }

  private onCache(e: CacheEvent): void {
    if (e.type === 'synced') return this.scanAllSoon();
    if (e.type === 'deleted') this.forget(e.kind, e.object);
    else this.scanOne(e.kind, e.object);
    this.flushSoon();
  }

  private keyOf(k: ScanKind, o: KubeObject) {
    return `${kindKey(k)}/${o.metadata.name}`;
  }

  private forget(k: ScanKind, o: KubeObject): void {
    const ns = o.metadata.namespace ?? '';
    if (this.results.get(ns)?.delete(this.keyOf(k, o))) this.dirty.add(ns);
  }

  private scanOne(k: ScanKind, o: KubeObject): void {
    const ns = o.metadata.namespace ?? '';
    const results = scanObject(this.state.set.policies, k, o, this.ctx(ns));
    if (!results.length) return this.forget(k, o);
    const byObject = this.results.get(ns) ?? new Map<string, ObjectResults>();
    this.results.set(ns, byObject);
    const key = this.keyOf(k, o);
    const object = {
      apiVersion: k.group ? `${k.group}/${k.version}` : k.version,
      kind: k.kind,
      ...(ns ? { namespace: ns } : {}),
      name: o.metadata.name,
      ...(typeof o.metadata.uid === 'string' ? { uid: o.metadata.uid } : {}),
    };
    const prev = byObject.get(key);
    // Unchanged results keep their timestamp, so a resync changes no report.
    if (prev && JSON.stringify([prev.object, prev.results]) === JSON.stringify([object, results]))
      return;
    byObject.set(key, { object, results, timestamp: Math.floor(Date.now() / 1000) });
    this.dirty.add(ns);
  }

  /**
   * Watches what the policies match and evaluates every cached object again, one pass at a
   * time (a pass asked for meanwhile runs once after).
   */
  private scanAll(): void {
    if (this.scanning) {
      this.again = true;
      return;
    }
    this.scanning = this.scanPass()
      .catch((e: Error) => this.log?.error({ error: e.message }, 'scan failed'))
      .finally(() => {
        this.scanning = undefined;
        if (this.again) {
          this.again = false;
          this.scanAll();
        }
      });
  }

  /**
   * One pass, yielding to the event loop every SLICE_MS so that reviews are answered while
   * thousands of objects are scanned. Objects are read live from the caches: one deleted
   * meanwhile is not visited; one changed meanwhile is scanned by its own event too.
   */
  private async scanPass(): Promise<void> {
    const caches = this.caches;
    if (!caches) return;
    const { kinds, unscannable } = scanKinds(this.state.set.policies);
    this.unscannable = unscannable;
    caches.sync(kinds);
    const before = new Map([...this.results].map(([ns, m]) => [ns, new Set(m.keys())]));
    const t0 = performance.now();
    let slice = t0;
    let n = 0;
    for (const [k, o] of caches.entries()) {
      this.scanOne(k, o);
      before.get(o.metadata.namespace ?? '')?.delete(this.keyOf(k, o));
      n++;
      if (performance.now() - slice > SLICE_MS) {
        await new Promise((r) => setImmediate(r));
        if (this.caches !== caches) return; // stopped
        slice = performance.now();
      }
    }
    // What was not seen again (its kind no longer matched, or gone during a relist).
    for (const [ns, gone] of before) {
      for (const key of gone) this.results.get(ns)?.delete(key);
      if (gone.size) this.dirty.add(ns);
    }
    this.flush();
    this.log?.debug({ objects: n, ms: Math.round(performance.now() - t0) }, 'scanned');
  }

  /** Rebuilds the reports of the namespaces whose results changed. */
  private flush(): void {
    for (const ns of this.dirty) {
      const store = ns ? this.namespaced : this.cluster;
      const objects = [...(this.results.get(ns)?.values() ?? [])];
      if (!objects.length) {
        this.results.delete(ns);
        this.created.delete(ns);
        store.delete(ns || undefined, buildReport(ns, [], '').metadata.name);
        continue;
      }
      let created = this.created.get(ns);
      if (!created) {
        created = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
        this.created.set(ns, created);
      }
      store.set(buildReport(ns, objects, created));
    }
    this.dirty.clear();
    cachedObjects.reset();
    for (const s of this.caches?.sizes() ?? [])
      cachedObjects.set({ resource: s.resource }, s.objects);
  }
}
