// One ExternalMetric, polled: read the source every intervalSeconds (each read bounded by
// timeoutSeconds), keep the last value, and say whether it may be served. A metric is
// available only when its last read succeeded and that read is at most staleAfterSeconds
// old: a failing or stalled source makes the HPA see an error (FailedGetExternalMetric),
// never an old number. Failures are counted per source on /metrics.
import { Counter } from 'prom-client';
import { formatDecimalSI } from '../apiserver/quantity.js';
import type { KubeClient } from '../kube/client.js';
import {
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
  private error?: { message: string; at: Date };
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly labels: { namespace: string; name: string; source: string };

  constructor(
    readonly metric: ExternalMetric,
    private readonly kube: KubeClient | null,
    /** Called after each read whose outcome (value, error, availability) changed. */
    private readonly onChange: (status: ExternalMetricStatus) => void = () => {},
    private readonly now: () => Date = () => new Date(),
  ) {
    this.timing = timingOf(metric.spec);
    const { namespace, name } = metric.metadata;
    this.labels = { namespace, name, source: sourceKind(metric.spec) ?? 'none' };
  }

  start(): this {
    void this.loop();
    return this;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
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
    const before = JSON.stringify(this.statusView());
    reads.inc(this.labels);
    try {
      const value = await withTimeout(
        readSource(this.metric.spec, {
          kube: this.kube,
          namespace: this.metric.metadata.namespace,
          timeoutMs: this.timing.timeoutMs,
        }),
        this.timing.timeoutMs,
      );
      this.reading = { value, quantity: toQuantity(value), at: this.now() };
      this.error = undefined;
    } catch (e) {
      const reason: FailureReason = e instanceof SourceError ? e.reason : 'parse';
      failures.inc({ ...this.labels, reason });
      this.error = { message: (e as Error).message, at: this.now() };
    }
    if (this.stopped) return;
    const status = this.statusView();
    if (JSON.stringify(status) !== before) this.onChange(status);
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
      available: !this.error && this.reading !== undefined,
      ...(this.reading ? { value: this.reading.quantity } : {}),
      ...(this.error ? { lastError: this.error.message } : {}),
      ...(gen !== undefined ? { observedGeneration: gen } : {}),
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
