// One ExternalMetric, polled: read the source every intervalSeconds (each read bounded by
// timeoutSeconds), keep the last value, and say whether it may be served. A metric is
// available only when its last read succeeded and that read is at most staleAfterSeconds
// old: a failing or stalled source makes the HPA see an error (FailedGetExternalMetric),
// never an old number. status says the same (`available`, condition Available with the
// reason), also when a value goes stale between reads. Failures are counted per source on
// /metrics.
import { Counter } from 'prom-client';
import type { AccessReviewer } from '../apiserver/auth/subject-access-review.js';
import { formatDecimalSI } from '../apiserver/quantity.js';
import type { KubeClient } from '../kube/client.js';
import { setCondition, type Condition } from '../core/conditions.js';
import { countCheck } from './access.js';
import type { OutboundPolicy } from './outbound.js';
import {
  AVAILABLE_REASONS,
  DEFAULT_INTERVAL_SECONDS,
  DEFAULT_STALE_INTERVALS,
  DEFAULT_TIMEOUT_SECONDS,
} from './schema.js';
import { readSource, sourceKind, SourceError, type FailureReason } from './sources.js';
import type { ExternalMetric, ExternalMetricStatus } from './types.js';

const failures = new Counter({
  name: 'annex_metric_source_failures_total',
  help: 'Failed reads of an ExternalMetric source, by ExternalMetric and reason.',
  labelNames: ['namespace', 'name', 'source', 'reason'] as const,
});
const reads = new Counter({
  name: 'annex_metric_source_reads_total',
  help: 'Reads of an ExternalMetric source, by ExternalMetric.',
  labelNames: ['namespace', 'name', 'source'] as const,
});

/** A number as a Kubernetes quantity, to milli precision (what the HPA reads: MilliValue). */
export function toQuantity(n: number): string {
  return formatDecimalSI(BigInt(Math.round(n * 1000)), -3);
}

export interface Reading {
  value: number;
  quantity: string;
  /** When it was read. */
  at: Date;
}

export type Availability = { ok: true; reading: Reading } | { ok: false; reason: string };

type NotAvailable = (typeof AVAILABLE_REASONS)[number];

/** The Available condition's reason for a failed read. */
const REASONS: Record<FailureReason, NotAvailable> = {
  refused: 'SourceRefused',
  unauthorized: 'Unauthorized',
  timeout: 'FetchFailed',
  http: 'FetchFailed',
  kube: 'FetchFailed',
  parse: 'ParseFailed',
};

/** What a poller reads with: the API server, the outbound allow-list, the author check. */
export interface PollContext {
  kube: KubeClient | null;
  outbound: OutboundPolicy;
  /** Asks whether an author may list what an objects source counts outside its namespace. */
  reviewer: Pick<AccessReviewer, 'review'> | null;
}

export interface Timing {
  intervalMs: number;
  timeoutMs: number;
  staleAfterMs: number;
}

export function timingOf(spec: ExternalMetric['spec']): Timing {
  const interval = spec.intervalSeconds ?? DEFAULT_INTERVAL_SECONDS;
  return {
    intervalMs: interval * 1000,
    timeoutMs: (spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    staleAfterMs: (spec.staleAfterSeconds ?? DEFAULT_STALE_INTERVALS * interval) * 1000,
  };
}

export class MetricPoller {
  readonly timing: Timing;
  private reading?: Reading;
  private error?: { message: string; reason: FailureReason; at: Date };
  private timer?: NodeJS.Timeout;
  private staleTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly labels: { namespace: string; name: string; source: string };
  /** The last status view reported to onChange (JSON). */
  private reported = '';
  /** As stored, so that lastTransitionTime survives a restart of annex. */
  private conditions: Condition[];

  constructor(
    readonly metric: ExternalMetric,
    private readonly ctx: PollContext,
    /** Called whenever the outcome (value, error, availability) changed: after a read, or on going stale. */
    private readonly onChange: (status: ExternalMetricStatus) => void = () => {},
    private readonly now: () => Date = () => new Date(),
  ) {
    this.timing = timingOf(metric.spec);
    const { namespace, name } = metric.metadata;
    this.labels = { namespace, name, source: sourceKind(metric.spec) ?? 'none' };
    this.conditions = metric.status?.conditions ?? [];
  }

  start(): this {
    void this.loop();
    return this;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.staleTimer);
  }

  private async loop(): Promise<void> {
    if (this.stopped) return;
    const started = Date.now();
    await this.poll();
    if (this.stopped) return;
    // Reads start every interval; a slow read does not push the next one back by its length.
    const wait = Math.max(0, this.timing.intervalMs - (Date.now() - started));
    this.timer = setTimeout(() => void this.loop(), wait);
  }

  /** One read (exported for tests); never throws. */
  async poll(): Promise<void> {
    reads.inc(this.labels);
    try {
      const value = await withTimeout(
        readSource(this.metric.spec, {
          kube: this.ctx.kube,
          namespace: this.metric.metadata.namespace,
          timeoutMs: this.timing.timeoutMs,
          outbound: this.ctx.outbound,
          mayCount: countCheck(this.ctx.reviewer, this.metric),
        }),
        this.timing.timeoutMs,
      );
      this.reading = { value, quantity: toQuantity(value), at: this.now() };
      this.error = undefined;
      this.armStale();
    } catch (e) {
      const reason: FailureReason = e instanceof SourceError ? e.reason : 'parse';
      failures.inc({ ...this.labels, reason });
      this.error = { message: bounded((e as Error).message), reason, at: this.now() };
    }
    if (!this.stopped) this.changed();
  }

  /**
   * The value goes stale with no read to notice it unless something looks then. A timer
   * counts from the event loop's cached time, which a long tick leaves behind the clock
   * `reading.at` was taken on, so it may fire before the value is stale: then it looks again.
   */
  private armStale(): void {
    clearTimeout(this.staleTimer);
    if (!this.reading || this.stopped) return;
    const left = this.reading.at.getTime() + this.timing.staleAfterMs + 1 - this.now().getTime();
    this.staleTimer = setTimeout(
      () => {
        this.changed();
        if (this.availability().ok) this.armStale();
      },
      Math.max(1, left),
    );
  }

  /** Updates the condition, and reports the status if it differs from the last one reported. */
  private changed(): void {
    const a = this.availability();
    const stale = !a.ok && !this.error && this.reading;
    this.conditions = setCondition(
      this.conditions,
      {
        type: 'Available',
        status: a.ok ? 'True' : 'False',
        reason: a.ok ? 'ValueRead' : this.error ? REASONS[this.error.reason] : 'Stale',
        message: a.ok
          ? 'the last read succeeded'
          : stale
            ? `no value read within staleAfterSeconds (${this.timing.staleAfterMs / 1000})`
            : a.reason,
        ...(this.metric.metadata.generation !== undefined
          ? { observedGeneration: this.metric.metadata.generation }
          : {}),
      },
      this.now(),
    );
    const view = JSON.stringify(this.statusView());
    if (view === this.reported) return;
    this.reported = view;
    this.onChange(this.status());
  }

  /** The value if it may be served now, else why not. */
  availability(): Availability {
    if (this.error) return { ok: false, reason: this.error.message };
    if (!this.reading) return { ok: false, reason: 'not read yet' };
    const age = this.now().getTime() - this.reading.at.getTime();
    if (age > this.timing.staleAfterMs) {
      return {
        ok: false,
        reason: `the last value is ${Math.round(age / 1000)}s old, past staleAfterSeconds (${this.timing.staleAfterMs / 1000})`,
      };
    }
    return { ok: true, reading: this.reading };
  }

  /** What status says: only what changes with an outcome (not every read's time); value is the last one read. */
  statusView(): ExternalMetricStatus {
    const gen = this.metric.metadata.generation;
    return {
      available: this.availability().ok,
      ...(this.reading ? { value: this.reading.quantity } : {}),
      ...(this.error ? { lastError: this.error.message } : {}),
      ...(gen !== undefined ? { observedGeneration: gen } : {}),
      ...(this.conditions.length ? { conditions: this.conditions } : {}),
    };
  }

  /** The status to write: the view plus the times of the outcome. */
  status(): ExternalMetricStatus {
    return {
      ...this.statusView(),
      ...(this.reading ? { timestamp: this.reading.at.toISOString() } : {}),
      ...(this.error ? { lastErrorTime: this.error.at.toISOString() } : {}),
    };
  }
}

/** Status carries the message twice (lastError, the condition): keep it well within the CRD's bounds. */
const MAX_MESSAGE = 4096;
const bounded = (m: string) => (m.length > MAX_MESSAGE ? `${m.slice(0, MAX_MESSAGE - 3)}...` : m);

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new SourceError('timeout', `no value within ${ms / 1000}s`)),
      ms + 50,
    );
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}
