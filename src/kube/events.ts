// Kubernetes Events (events.k8s.io/v1) the way client-go's recorder writes them: an
// identical event seen again within a window is not a new Event but a growing
// `series.count` on the first one (a PATCH), and a token bucket per regarding object caps
// the writes, so a loop of refused requests makes one Event with a count, not an etcd
// write storm. Recording never throws and never waits: the writes go through the work queue
// (keys `event/<controller>/<series>`), so a failed one is reported to onError and tried
// again after the queue's per-series backoff (0.5 s doubling to 30 s) until it holds —
// client-go retries only while the API server is unreachable, but a 403 (RBAC being fixed)
// or a 429/5xx can pass too; a 400/404/422 (the Event itself refused) is dropped.
// Memory is bounded by `maxEntries` series and buckets.
import type { KubeClient } from './client.js';
import { KubeApiError } from './errors.js';
import { WorkQueue, type WriterQueue } from './workqueue.js';

/** core/v1 ObjectReference, as `regarding` and `related` hold it. */
export interface ObjectReference {
  apiVersion?: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
}

/** What a caller reports; the recorder adds time, series, controller and instance. */
export interface EventInput {
  regarding: ObjectReference;
  related?: ObjectReference;
  /** CamelCase, e.g. PolicyViolation. */
  reason: string;
  /** What was done, e.g. Denied. */
  action: string;
  /** Human text, cut to 1 KB. Never an object's contents. */
  note: string;
  type: 'Normal' | 'Warning';
}

/** Where Events go: the API server (kubeEventSink) or a test double. */
export interface EventSink {
  create(namespace: string, event: EventBody): Promise<void>;
  /** Updates the series of an existing Event; rejects with a 404 KubeApiError if it is gone. */
  patchSeries(namespace: string, name: string, series: EventSeries): Promise<void>;
}

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

export interface EventBody extends Omit<EventInput, 'note'> {
  apiVersion: 'events.k8s.io/v1';
  kind: 'Event';
  metadata: { name: string; namespace: string };
  note: string;
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  series?: EventSeries;
}

export interface EventRecorderOptions {
  sink: EventSink;
  /** The process's work queue; a private one when absent (tests). */
  queue?: WorkQueue;
  /** reportingController: a qualified name, e.g. annex.dev/policy. */
  controller: string;
  /**
   * Its keys on the work queue are `<queueKind>/<series>`; default `event/<controller>`.
   * Two recorders on one queue need two kinds (one replaces the other's writer).
   */
  queueKind?: string;
  /** reportingInstance: this replica (pod or host name), at most 128 characters. */
  instance: string;
  /** Repeats closer together than this extend the series (default 6 min, client-go's). */
  windowMs?: number;
  /** Writes per object at once (default 25, client-go's spam filter burst)… */
  burst?: number;
  /** …then one more per this many ms (default 5 min, client-go's qps 1/300). */
  refillMs?: number;
  /** Series and buckets kept (default 4096); the least recently seen go first. */
  maxEntries?: number;
  /** A failed write; `retryInMs` when it will be tried again. */
  onError?: (err: Error, event: EventInput, retryInMs?: number) => void;
}

/** The events.k8s.io limit on `note`. */
export const MAX_NOTE_BYTES = 1024;

/** metav1.MicroTime: RFC 3339 with six fractional digits. */
export const microTime = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '000Z');

/** Cuts UTF-8 text to `max` bytes without splitting a character. */
export function truncateUtf8(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  const ellipsis = '…';
  let cut = Buffer.from(text)
    .subarray(0, max - Buffer.byteLength(ellipsis))
    .toString('utf8');
  cut = cut.replace(/\uFFFD$/, '');
  return cut + ellipsis;
}

/**
 * `<regarding name>.<hex nanoseconds>`, as client-go names Events. (The API server checks
 * an Event's generateName as a whole name, so generateName cannot end in a separator.)
 */
function eventName(ref: ObjectReference, ms: number): string {
  const base = ref.name
    .toLowerCase()
    .replace(/[^a-z0-9.-]+/g, '-')
    .replace(/^[^a-z0-9]+|[^a-z0-9]+$/g, '')
    .slice(0, 200);
  const ns = BigInt(ms) * 1_000_000n + BigInt(Math.floor(Math.random() * 1_000_000));
  return `${base || 'event'}.${ns.toString(16)}`;
}

const refKey = (r: ObjectReference | undefined) =>
  r ? [r.apiVersion ?? '', r.kind, r.namespace ?? '', r.name, r.uid ?? ''].join('\u0000') : '';

interface Series {
  /** Its key on the work queue. */
  id: string;
  namespace: string;
  input: EventInput;
  objectKey: string;
  firstObserved: number;
  lastObserved: number;
  count: number;
  /** The Event's name once created. */
  name?: string;
  /** Observations not yet written. */
  dirty: boolean;
  /** The next write is a retry: it spends no token (the failed write spent one). */
  retry?: boolean;
  inFlight: boolean;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class EventRecorder {
  private readonly series = new Map<string, Series>();
  private readonly buckets = new Map<string, Bucket>();
  private readonly windowMs: number;
  private readonly burst: number;
  private readonly refillMs: number;
  private readonly maxEntries: number;
  private readonly byId = new Map<string, Series>();
  private readonly queue: WorkQueue;
  private readonly q: WriterQueue;
  private nextId = 0;
  private stopped = false;

  constructor(private readonly opts: EventRecorderOptions) {
    this.windowMs = opts.windowMs ?? 6 * 60_000;
    this.burst = opts.burst ?? 25;
    this.refillMs = opts.refillMs ?? 5 * 60_000;
    this.maxEntries = opts.maxEntries ?? 4096;
    this.queue = opts.queue ?? new WorkQueue();
    this.q = this.queue.writer(opts.queueKind ?? `event/${opts.controller}`, {
      handle: (id) => this.write(id),
      // The Event itself refused: writing it again cannot succeed.
      permanent: (e) => e instanceof KubeApiError && [400, 404, 422].includes(e.code),
      onError: (id, e, retryInMs) => {
        const s = this.byId.get(id);
        if (s) this.opts.onError?.(e, s.input, retryInMs);
      },
    });
  }

  /**
   * Records one occurrence. The Event lives in `namespace`, which must be the regarding
   * object's namespace, or `default` when that object is cluster-scoped (as the API
   * server validates).
   */
  record(namespace: string, input: EventInput): void {
    if (this.stopped) return;
    const event = { ...input, note: truncateUtf8(input.note, MAX_NOTE_BYTES) };
    const now = Date.now();
    const key = [
      namespace,
      refKey(event.regarding),
      refKey(event.related),
      event.reason,
      event.action,
      event.type,
      event.note,
    ].join('\u0001');
    let s = this.series.get(key);
    if (s && now - s.lastObserved > this.windowMs && !s.inFlight) {
      this.forget(key, s);
      s = undefined;
    }
    if (s) {
      this.series.delete(key); // re-insert: Map order is least recently seen first
      s.count++;
      s.lastObserved = now;
      s.dirty = true;
    } else {
      s = {
        id: String(this.nextId++),
        namespace,
        input: event,
        objectKey: refKey(event.regarding),
        firstObserved: now,
        lastObserved: now,
        count: 1,
        dirty: true,
        inFlight: false,
      };
    }
    this.series.set(key, s);
    this.byId.set(s.id, s);
    this.trim(now);
    // Not while it waits for a token or a retry: that write carries this observation too.
    this.q.add(s.id);
  }

  /** Resolves once no write is in flight (tests; graceful shutdown). */
  async idle(): Promise<void> {
    await this.queue.idle();
  }

  /** Stops writing; pending series counts are dropped. */
  stop(): void {
    this.stopped = true;
    for (const [key, s] of this.series) this.forget(key, s);
    if (!this.opts.queue) void this.queue.shutDown();
  }

  /** Series and buckets held (for tests of the memory bound). */
  get size(): { series: number; buckets: number } {
    return { series: this.series.size, buckets: this.buckets.size };
  }

  private forget(key: string, s: Series): void {
    this.q.forget(s.id);
    this.byId.delete(s.id);
    this.series.delete(key);
  }

  /** Drops expired series, then the least recently seen beyond the bound. */
  private trim(now: number): void {
    for (const [key, s] of this.series) {
      const expired = now - s.lastObserved > this.windowMs && !s.dirty && !s.inFlight;
      if (!expired && this.series.size <= this.maxEntries) break;
      this.forget(key, s);
    }
  }

  private refilled(b: Bucket, now: number): number {
    return Math.min(this.burst, b.tokens + (now - b.at) / this.refillMs);
  }

  /** Takes a token for the object: 0 when taken, else ms until the next one. */
  private take(objectKey: string, now: number): number {
    const b = this.buckets.get(objectKey) ?? { tokens: this.burst, at: now };
    const tokens = this.refilled(b, now);
    this.buckets.delete(objectKey);
    // Buckets are touched in order too: the one idle longest goes (most likely refilled).
    for (const key of this.buckets.keys()) {
      if (this.buckets.size < this.maxEntries) break;
      this.buckets.delete(key);
    }
    if (tokens >= 1) {
      this.buckets.set(objectKey, { tokens: tokens - 1, at: now });
      return 0;
    }
    this.buckets.set(objectKey, { tokens, at: now });
    return Math.ceil((1 - tokens) * this.refillMs);
  }

  /** The queue's handler: writes a series' observations (a throw is retried by the queue). */
  private async write(id: string): Promise<void> {
    const s = this.byId.get(id);
    if (!s || this.stopped || !s.dirty) return;
    const wait = s.retry ? 0 : this.take(s.objectKey, Date.now());
    if (wait > 0) return this.q.addAfter(id, wait);
    s.retry = false;
    s.dirty = false;
    s.inFlight = true;
    const series = { count: s.count, lastObservedTime: microTime(s.lastObserved) };
    try {
      if (s.name) {
        await this.opts.sink.patchSeries(s.namespace, s.name, series);
      } else {
        const body = this.body(s, series);
        await this.opts.sink.create(s.namespace, body);
        s.name = body.metadata.name;
      }
    } catch (e) {
      if (s.name && e instanceof KubeApiError && e.code === 404) {
        // The Event expired (events have a TTL) or was deleted: the series starts a new one.
        s.name = undefined;
        s.dirty = true;
        this.q.add(id);
        return;
      }
      s.dirty = true;
      s.retry = true;
      throw e;
    } finally {
      s.inFlight = false;
    }
  }

  private body(s: Series, series: EventSeries): EventBody {
    return {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: eventName(s.input.regarding, Date.now()), namespace: s.namespace },
      ...s.input,
      eventTime: microTime(s.firstObserved),
      reportingController: this.opts.controller,
      reportingInstance: this.opts.instance.slice(0, 128),
      ...(s.count > 1 ? { series } : {}),
    };
  }
}

/** Writes Events through the API server annex extends. */
export function kubeEventSink(kube: KubeClient): EventSink {
  const base = (ns: string) => `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(ns)}/events`;
  return {
    create: async (ns, event) => {
      await kube.create(base(ns), event);
    },
    patchSeries: async (ns, name, series) => {
      await kube.patch(`${base(ns)}/${encodeURIComponent(name)}`, { series }, 'merge');
    },
  };
}
