// The one work queue every write annex makes goes through, with client-go's semantics
// (k8s.io/client-go/util/workqueue): a key queued twice is queued once; a key is never
// handled twice at once (added again while handled, it is handled once more after); a
// failed key comes back after max(its own backoff, the overall token bucket's wait) — the
// DefaultControllerRateLimiter pairing, with annex's 0.5 s doubling to 30 s per key
// (ItemBackoff) and client-go's 10 qps burst 100 overall; a success forgets the key's
// failures. One queue for every writer, so retries share one concurrency bound and one
// rate limit instead of a loop per writer each free to hammer a recovering API server.
import { ItemBackoff } from './backoff.js';

/** Thrown (or classified) by a handler: the write can never succeed as it is; drop it. */
export class PermanentError extends Error {}

export interface Writer {
  /**
   * Handles `name`: resolves when the write holds (or there is nothing to do); a throw is
   * retried with backoff, unless `permanent` says the error is final.
   */
  handle(name: string): Promise<void> | void;
  /** Errors that retrying cannot fix (e.g. a 422 on an Event): dropped, not retried. */
  permanent?(err: unknown): boolean;
  /** Every failure; `retryInMs` unless the key was dropped. */
  onError?(name: string, err: Error, retryInMs?: number): void;
}

/** What a writer holds: its own keys, namespaced `<kind>/<name>` in the shared queue. */
export interface WriterQueue {
  add(name: string): void;
  addAfter(name: string, ms: number): void;
  /** Clears the name's failures and any wait: the next `add` queues it at once. */
  forget(name: string): void;
}

export interface WorkQueueOptions {
  /** Handlers running at once (default 4). */
  concurrency?: number;
  /** The overall bucket for retries: refill per second (default 10) and size (100). */
  qps?: number;
  burst?: number;
  firstMs?: number;
  maxMs?: number;
}

export interface WorkQueueStats {
  /** Keys waiting for a worker. */
  depth: number;
  /** Keys waiting for their time (addAfter, retries). */
  delayed: number;
  processing: number;
  /** Retries scheduled since the start. */
  retries: number;
}

export class WorkQueue {
  private readonly writers = new Map<string, Writer>();
  private readonly ready: string[] = [];
  /** Keys to handle (queued, or re-added while being handled). */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly delayed = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  private readonly backoff: ItemBackoff<string>;
  private readonly running = new Set<Promise<void>>();
  private readonly concurrency: number;
  private readonly qps: number;
  private readonly burst: number;
  private tokens: number;
  private tokensAt = Date.now();
  private retries = 0;
  private down = false;

  constructor(opts: WorkQueueOptions = {}) {
    this.concurrency = opts.concurrency ?? 4;
    this.qps = opts.qps ?? 10;
    this.burst = opts.burst ?? 100;
    this.tokens = this.burst;
    this.backoff = new ItemBackoff(opts.firstMs ?? 500, opts.maxMs ?? 30_000);
  }

  /**
   * Registers the writer of keys `<kind>/…` (kind may hold slashes: `policy/status`; the
   * longest registered kind wins); returns its handle on the queue. Registering a kind
   * again replaces its writer (a feature started anew).
   */
  writer(kind: string, w: Writer): WriterQueue {
    this.writers.set(kind, w);
    const key = (name: string) => `${kind}/${name}`;
    return {
      add: (name) => this.add(key(name)),
      addAfter: (name, ms) => this.addAfter(key(name), ms),
      forget: (name) => this.forget(key(name)),
    };
  }

  /**
   * Queues `key`, unless it is queued or waiting for its time: a key backing off is not
   * hammered by every new reason to write it (`forget` first to write it now).
   */
  add(key: string): void {
    if (this.down || this.dirty.has(key) || this.delayed.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // handled again once the current run ends
    this.ready.push(key);
    this.pump();
  }

  /** Adds `key` in `ms`; an earlier time already set for it wins. */
  addAfter(key: string, ms: number): void {
    if (this.down) return;
    if (ms <= 0) return this.add(key);
    const at = Date.now() + ms;
    const d = this.delayed.get(key);
    if (d && d.at <= at) return;
    if (d) clearTimeout(d.timer);
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, ms);
    // A pending retry must not keep a process alive that has nothing else to do.
    timer.unref?.();
    this.delayed.set(key, { at, timer });
  }

  /** Clears the key's failures and any wait for its time. */
  forget(key: string): void {
    this.backoff.forget(key);
    const d = this.delayed.get(key);
    if (d) clearTimeout(d.timer);
    this.delayed.delete(key);
  }

  stats(): WorkQueueStats {
    return {
      depth: this.ready.length,
      delayed: this.delayed.size,
      processing: this.processing.size,
      retries: this.retries,
    };
  }

  /** Resolves once no handler runs (tests; shutdown). */
  async idle(): Promise<void> {
    while (this.running.size) await Promise.allSettled([...this.running]);
  }

  /** Takes no more keys, drops the waiting ones and their timers; resolves once handlers end. */
  async shutDown(): Promise<void> {
    this.down = true;
    for (const d of this.delayed.values()) clearTimeout(d.timer);
    this.delayed.clear();
    this.ready.length = 0;
    this.dirty.clear();
    await this.idle();
  }

  /** The overall bucket: 0 if a token is free now, else ms until the debt is repaid. */
  private reserve(): number {
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.tokensAt) / 1000) * this.qps);
    this.tokensAt = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  private pump(): void {
    while (!this.down && this.processing.size < this.concurrency && this.ready.length) {
      const key = this.ready.shift()!;
      this.dirty.delete(key);
      this.processing.add(key);
      const run = this.run(key);
      this.running.add(run);
      void run.then(() => this.running.delete(run));
    }
  }

  private async run(key: string): Promise<void> {
    let kind = '';
    for (const k of this.writers.keys())
      if (key.startsWith(`${k}/`) && k.length > kind.length) kind = k;
    const w = this.writers.get(kind);
    const name = key.slice(kind.length + 1);
    try {
      await w?.handle(name);
      this.backoff.forget(key);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      if (e instanceof PermanentError || w?.permanent?.(e)) {
        this.backoff.forget(key);
        w?.onError?.(name, err);
      } else if (!this.down) {
        const delay = Math.max(this.backoff.fail(key), this.reserve());
        this.retries++;
        w?.onError?.(name, err, delay);
        this.addAfter(key, delay);
      }
    } finally {
      this.processing.delete(key);
      // Re-added while handled: again now, unless it failed and waits for its retry.
      if (this.delayed.has(key)) this.dirty.delete(key);
      else if (this.dirty.has(key) && !this.down) this.ready.push(key);
      this.pump();
    }
  }
}
