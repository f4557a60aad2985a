// metrics-server's storage rules (kubelet-metrics.md §2.3–2.4): keep the last two points per
// node and per container, serve CPU as the rate between them, and rebuild from each batch
// so a node or pod that was not scraped vanishes at once. On top of that annex keeps a
// resourceVersion and watch history, because it serves watch where metrics-server does not.
import type { Logger } from '../log.js';
import type { KubeObject, Provider, Snapshot, WatchEvent } from '../core/types.js';
import { formatGoDuration, formatKubeTime } from './duration.js';
import { WatchHistory } from '../apiserver/watch-history.js';
import type { MetricsBatch, MetricsPoint } from './points.js';
import { formatCpu, formatMemory } from '../apiserver/quantity.js';
import { sameJson } from './same-json.js';

/** `fn` remembering its last answer: the objects of one scrape mostly share a time and window. */
function lastOf<A, R>(fn: (a: A) => R): (a: A) => R {
  let last: { arg: A; result: R } | undefined;
  return (arg) => {
    if (last?.arg !== arg) last = { arg, result: fn(arg) };
    return last.result;
  };
}
const kubeTime = lastOf(formatKubeTime);
const goDuration = lastOf(formatGoDuration);

/** A container younger than this gets no synthetic first point: "can produce inaccurate data". */
const FRESH_CONTAINER_MIN_NS = 10_000_000_000n;
const NS_PER_S = 1_000_000_000n;

export interface Usage {
  cpu: string;
  memory: string;
}

export interface NodeMetrics extends KubeObject {
  kind: 'NodeMetrics';
  apiVersion: string;
  timestamp: string;
  window: string;
  usage: Usage;
}

export interface PodMetrics extends KubeObject {
  kind: 'PodMetrics';
  apiVersion: string;
  /** null only when every container's usage was skipped (Go's zero time), as metrics-server. */
  timestamp: string | null;
  window: string;
  containers: { name: string; usage: Usage }[];
}

export interface StoreOptions {
  /** The collection interval; bounds the fresh-container rule. */
  resolutionMs: number;
  /** apiVersion stamped on objects (the serving layer may rewrite it per version). */
  apiVersion?: string;
  /** Watch events kept per resource for resuming watches. */
  historyLimit?: number;
  /**
   * Clock for metadata.creationTimestamp of stored objects and watch events: when the object
   * last changed. Served lists and gets carry the response time instead (metrics-server
   * stamps the request time; the group declares creationTimestampIsNow).
   */
  now?: () => number;
  log?: Logger;
}

interface TimeInfo {
  tsNs: bigint;
  windowNs: bigint;
}

/** Usage between two points, or the reason metrics-server would skip the object. */
export function resourceUsage(
  last: MetricsPoint,
  prev: MetricsPoint,
): { usage: Usage; time: TimeInfo } | { error: string } {
  if (last.startNs < prev.startNs)
    return { error: 'unexpected decrease in startTime of node/container' };
  if (last.cpuNs < prev.cpuNs)
    return { error: 'unexpected decrease in cumulative CPU usage value' };
  const windowNs = last.tsNs - prev.tsNs;
  if (windowNs <= 0n) return { error: 'non-positive window' };
  // Go's Duration.Seconds(): whole seconds plus the remainder, both in float64.
  const seconds = Number(windowNs / NS_PER_S) + Number(windowNs % NS_PER_S) / 1e9;
  const nanocores = Math.trunc(Number(last.cpuNs - prev.cpuNs) / seconds);
  return {
    usage: { cpu: formatCpu(BigInt(nanocores)), memory: formatMemory(last.memory) },
    time: { tsNs: last.tsNs, windowNs },
  };
}

interface NodeEntry {
  labels?: Record<string, string>;
  point: MetricsPoint;
}

interface PodEntry {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  containers: Map<string, MetricsPoint>;
}

/** Keep `prev` when a new point repeats or predates `last` (a stale kubelet cache). */
function nextPrev(
  incoming: MetricsPoint,
  oldLast: MetricsPoint | undefined,
  oldPrev: MetricsPoint | undefined,
): MetricsPoint | undefined {
  if (oldLast && incoming.tsNs > oldLast.tsNs) return oldLast;
  if (oldPrev && oldPrev.tsNs < incoming.tsNs) return oldPrev;
  return undefined;
}

const byName = (a: KubeObject, b: KubeObject) =>
  a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
const byNamespaceName = (a: KubeObject, b: KubeObject) => {
  const na = a.metadata.namespace ?? '';
  const nb = b.metadata.namespace ?? '';
  return na < nb ? -1 : na > nb ? 1 : byName(a, b);
};

/** Current objects of one resource, their change detection and their watch history. */
class ResourceView {
  /** By key: the object as served (`object`) and as built from the scrape (`built`). */
  private current = new Map<string, { object: KubeObject; built: KubeObject }>();
  private sorted: KubeObject[] = [];
  readonly history: WatchHistory;

  constructor(
    historyLimit: number,
    private readonly order: (a: KubeObject, b: KubeObject) => number,
    log?: Logger,
  ) {
    this.history = new WatchHistory(historyLimit, (err) =>
      log?.warn({ err: String(err) }, 'metrics watch listener failed'),
    );
  }

  /** Replace the objects and append an event per added, changed or removed one. */
  diff(next: Map<string, KubeObject>, nextRv: () => number, nowIso: string): void {
    const events: [number, WatchEvent][] = [];
    const updated = new Map<string, { object: KubeObject; built: KubeObject }>();
    for (const [key, object] of next) {
      const old = this.current.get(key);
      if (old && sameJson(old.built, object)) {
        updated.set(key, old);
        continue;
      }
      const rv = nextRv();
      // One object for the snapshot and the event; kept as long as the object is unchanged,
      // so the served encoding of it is too.
      const stamped = withVersion(object, String(rv), nowIso);
      updated.set(key, { object: stamped, built: object });
      events.push([rv, { type: old ? 'MODIFIED' : 'ADDED', object: stamped }]);
    }
    for (const [key, old] of this.current) {
      if (updated.has(key)) continue;
      const rv = nextRv();
      events.push([rv, { type: 'DELETED', object: withVersion(old.object, String(rv), nowIso) }]);
    }
    this.current = updated;
    this.sorted = [...updated.values()].map((v) => v.object).sort(this.order);
    // Room for two full updates, so a client that listed before the last tick can still watch.
    this.history.ensureCapacity(2 * updated.size);
    for (const [rv, event] of events.sort((a, b) => a[0] - b[0])) this.history.append(rv, event);
  }

  items(): KubeObject[] {
    // A fresh array each call: callers may sort or splice it; the objects are shared, read-only.
    return this.sorted.slice();
  }

  get count(): number {
    return this.sorted.length;
  }
}

/** The object at `resourceVersion`, created `nowIso`: metadata in metrics-server's key order. */
function withVersion(object: KubeObject, resourceVersion: string, nowIso: string): KubeObject {
  const { name, namespace, labels } = object.metadata;
  return {
    ...object,
    metadata: {
      name,
      ...(namespace !== undefined ? { namespace } : {}),
      resourceVersion,
      creationTimestamp: nowIso,
      ...(labels !== undefined ? { labels } : {}),
    },
  };
}

const hasLabels = (l?: Record<string, string>) => l !== undefined && Object.keys(l).length > 0;

export class MetricsStore {
  private nodeLast = new Map<string, NodeEntry>();
  private nodePrev = new Map<string, MetricsPoint>();
  private podLast = new Map<string, PodEntry>();
  private podPrev = new Map<string, Map<string, MetricsPoint>>();
  private rv = 0;
  private readonly resolutionNs: bigint;
  private readonly apiVersion: string;
  private readonly now: () => number;
  private readonly log: Logger | undefined;
  private readonly nodeView: ResourceView;
  private readonly podView: ResourceView;

  /** Providers for the framework: NodeMetrics and PodMetrics. */
  readonly nodes: Provider;
  readonly pods: Provider;

  constructor(opts: StoreOptions) {
    this.resolutionNs = BigInt(Math.trunc(opts.resolutionMs)) * 1_000_000n;
    this.apiVersion = opts.apiVersion ?? 'metrics.annex.dev/v1beta1';
    this.now = opts.now ?? Date.now;
    this.log = opts.log;
    const limit = opts.historyLimit ?? 10_000;
    this.nodeView = new ResourceView(limit, byName, opts.log);
    this.podView = new ResourceView(limit, byNamespaceName, opts.log);
    this.nodes = this.provider(this.nodeView);
    this.pods = this.provider(this.podView);
  }

  /** Ready as metrics-server's storage: ≥1 node and ≥1 pod have two points. */
  ready(): boolean {
    return this.nodePrev.size > 0 && this.podPrev.size > 0;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  /** Servable object counts (for logs and gauges). */
  counts(): { nodes: number; pods: number } {
    return { nodes: this.nodeView.count, pods: this.podView.count };
  }

  store(batch: MetricsBatch): void {
    this.storeNodes(batch);
    this.storePods(batch);
    const nowIso = new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const nextRv = () => ++this.rv;
    this.nodeView.diff(this.buildNodes(), nextRv, nowIso);
    this.podView.diff(this.buildPods(), nextRv, nowIso);
  }

  private storeNodes(batch: MetricsBatch): void {
    const last = new Map<string, NodeEntry>();
    const prev = new Map<string, MetricsPoint>();
    for (const n of batch.nodes) {
      last.set(n.name, { labels: n.labels, point: n.point });
      const p = nextPrev(n.point, this.nodeLast.get(n.name)?.point, this.nodePrev.get(n.name));
      if (p) prev.set(n.name, p);
      else if (this.nodeLast.has(n.name)) {
        this.log?.debug({ node: n.name }, 'new node metrics point is not newer than stored ones');
      }
    }
    this.nodeLast = last;
    this.nodePrev = prev;
  }

  private storePods(batch: MetricsBatch): void {
    const last = new Map<string, PodEntry>();
    const prev = new Map<string, Map<string, MetricsPoint>>();
    for (const pod of batch.pods) {
      const key = `${pod.namespace}/${pod.name}`;
      last.set(key, { ...pod });
      const oldLast = this.podLast.get(key)?.containers;
      const oldPrev = this.podPrev.get(key);
      const prevContainers = new Map<string, MetricsPoint>();
      for (const [name, point] of pod.containers) {
        const p = this.containerPrev(point, oldLast?.get(name), oldPrev?.get(name));
        if (p) prevContainers.set(name, p);
      }
      if (prevContainers.size > 0) prev.set(key, prevContainers);
    }
    this.podLast = last;
    this.podPrev = prev;
  }

  private containerPrev(
    point: MetricsPoint,
    oldLast: MetricsPoint | undefined,
    oldPrev: MetricsPoint | undefined,
  ): MetricsPoint | undefined {
    const age = point.tsNs - point.startNs;
    if (point.startNs < point.tsNs && age >= FRESH_CONTAINER_MIN_NS && age < this.resolutionNs) {
      // A container that started within one interval is served after one scrape, measured
      // from its start with a synthetic zero-CPU point.
      return { ...point, tsNs: point.startNs, cpuNs: 0n };
    }
    // A start time at or after the stored sample means a restart: no prev for now.
    if (!oldLast || !(point.startNs < oldLast.tsNs)) return undefined;
    return nextPrev(point, oldLast, oldPrev);
  }

  private buildNodes(): Map<string, KubeObject> {
    const out = new Map<string, KubeObject>();
    for (const [name, entry] of this.nodeLast) {
      const prev = this.nodePrev.get(name);
      if (!prev) continue;
      const r = resourceUsage(entry.point, prev);
      if ('error' in r) {
        this.log?.warn({ node: name, err: r.error }, 'Skipping node usage metric');
        continue;
      }
      const node: NodeMetrics = {
        kind: 'NodeMetrics',
        apiVersion: this.apiVersion,
        metadata: { name, ...(hasLabels(entry.labels) ? { labels: entry.labels } : {}) },
        timestamp: kubeTime(r.time.tsNs),
        window: goDuration(r.time.windowNs),
        usage: r.usage,
      };
      out.set(name, node);
    }
    return out;
  }

  private buildPods(): Map<string, KubeObject> {
    const out = new Map<string, KubeObject>();
    for (const [key, pod] of this.podLast) {
      const prev = this.podPrev.get(key);
      if (!prev) continue;
      // Every container of the latest scrape needs a prev, or the pod is not served yet.
      if ([...pod.containers.keys()].some((c) => !prev.has(c))) continue;
      const containers: PodMetrics['containers'] = [];
      let earliest: TimeInfo | undefined;
      for (const name of [...pod.containers.keys()].sort()) {
        const r = resourceUsage(
          pod.containers.get(name) as MetricsPoint,
          prev.get(name) as MetricsPoint,
        );
        if ('error' in r) {
          this.log?.warn(
            { pod: key, container: name, err: r.error },
            'Skipping container usage metric',
          );
          continue;
        }
        containers.push({ name, usage: r.usage });
        // The pod's time is its least recent container's: the whole pod is at least this fresh.
        if (!earliest || r.time.tsNs < earliest.tsNs) earliest = r.time;
      }
      const metrics: PodMetrics = {
        kind: 'PodMetrics',
        apiVersion: this.apiVersion,
        metadata: {
          name: pod.name,
          namespace: pod.namespace,
          ...(hasLabels(pod.labels) ? { labels: pod.labels } : {}),
        },
        timestamp: earliest ? kubeTime(earliest.tsNs) : null,
        window: goDuration(earliest?.windowNs ?? 0n),
        containers,
      };
      out.set(key, metrics);
    }
    return out;
  }

  private provider(view: ResourceView): Provider {
    return {
      snapshot: (): Snapshot => ({ resourceVersion: String(this.rv), items: view.items() }),
      subscribe: (resourceVersion, onEvent) => view.history.subscribe(resourceVersion, onEvent),
    };
  }
}
