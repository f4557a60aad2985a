// The in-cluster source: every interval, list Nodes and scrape each kubelet's
// /metrics/resource (kubelet-metrics.md §2.1), then hand the merged batch to the store.
// A node that fails is left out of the batch, so it disappears from the API at once; the
// failure is one log line (node + error, never a body) and one counter increment.
import { setMaxListeners } from 'node:events';
import type https from 'node:https';
import {
  register as defaultRegistry,
  type Counter,
  type Gauge,
  type Histogram,
  type Registry,
} from 'prom-client';
import { counter, gauge, histogram } from '../core/metric.js';
import type { Logger } from '../log.js';
import { decodeResourceMetrics } from './decode.js';
import {
  DEFAULT_ADDRESS_TYPES,
  DEFAULT_KUBELET_PORT,
  fetchKubelet,
  kubeletAgent,
  kubeletTarget,
  targetUrl,
  type KubeletTls,
  type NodeLike,
} from './kubelet-client.js';
import type { MetricsBatch, NodeSample, PodSample } from './points.js';

export type { NodeLike } from './kubelet-client.js';

/** The fields of a core/v1 Pod (or its metadata) used to label and filter PodMetrics. */
export interface PodLike {
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  status?: { phase?: string };
}

export interface KubeletScraperOptions {
  /** Lists Node objects (written in src/kube/; injected so this module holds no client). */
  listNodes: () => Promise<NodeLike[]>;
  /**
   * Lists Pods to label PodMetrics and to serve Running pods only, as metrics-server's pod
   * informer does. Without it every scraped pod is served, unlabelled.
   */
  listPods?: () => Promise<PodLike[]>;
  /** Receives each tick's batch (MetricsStore.store). */
  onBatch: (batch: MetricsBatch) => void;
  intervalSeconds?: number;
  timeoutSeconds?: number;
  /** Requests in flight at once. */
  concurrency?: number;
  preferredAddressTypes?: string[];
  /** Used when node status publishes no kubelet port. */
  defaultPort?: number;
  tls?: KubeletTls;
  /** Called per tick so a rotated ServiceAccount token is picked up. */
  bearerToken?: () => string | undefined | Promise<string | undefined>;
  /** Spread request starts over min(8 ms × nodes, 4 s), as metrics-server does. */
  stagger?: boolean;
  maxBodyBytes?: number;
  log?: Logger;
  registry?: Registry;
}

interface ScraperMetrics {
  failures: Counter<'node'>;
  duration: Histogram;
  lastTick: Gauge;
}

function scraperMetrics(registry: Registry): ScraperMetrics {
  return {
    failures: counter(
      {
        name: 'annex_metrics_scrape_failures_total',
        help: 'Kubelet scrapes that failed (dial, TLS, status, timeout or parse error), by node.',
        labelNames: ['node'],
      },
      registry,
    ),
    duration: histogram(
      {
        name: 'annex_metrics_scrape_duration_seconds',
        help: 'Duration of one kubelet /metrics/resource request, failed ones included.',
      },
      registry,
    ),
    lastTick: gauge(
      {
        name: 'annex_metrics_last_tick_timestamp_seconds',
        help: 'Unix time when the last metrics collection tick started.',
      },
      registry,
    ),
  };
}

/** A counting semaphore: at most `n` holders. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

const sleep = (ms: number) =>
  new Promise<void>((resolve) => (ms > 0 ? setTimeout(resolve, ms) : resolve()));

interface NodeResult {
  node?: NodeSample;
  pods: PodSample[];
}

export class KubeletScraper {
  readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly agent: https.Agent;
  private readonly limit: <T>(task: () => Promise<T>) => Promise<T>;
  private readonly metrics: ScraperMetrics;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private lastPods: PodLike[] | undefined;
  private lastNodes: NodeLike[] | undefined;
  /** When the newest tick started (ms), for a liveness check like metrics-server's. */
  lastTickStartedAt: number | undefined;

  constructor(private readonly opts: KubeletScraperOptions) {
    this.intervalMs = (opts.intervalSeconds ?? 15) * 1000;
    this.timeoutMs = (opts.timeoutSeconds ?? 10) * 1000;
    if (!(this.timeoutMs > 0)) throw new Error('kubelet timeout must be greater than 0');
    if (this.timeoutMs > this.intervalMs * 0.9) {
      throw new Error('the scrape interval must be larger than the kubelet request timeout / 0.9');
    }
    const concurrency = opts.concurrency ?? 32;
    this.agent = kubeletAgent(opts.tls ?? {}, concurrency);
    this.limit = limiter(concurrency);
    this.metrics = scraperMetrics(opts.registry ?? defaultRegistry);
    setMaxListeners(0, this.stopping.signal);
  }

  /** First tick at once, then one per interval; ticks never overlap. */
  start(): void {
    const loop = () => {
      const started = Date.now();
      this.running = this.tick().finally(() => {
        if (this.stopping.signal.aborted) return;
        const wait = Math.max(0, started + this.intervalMs - Date.now());
        this.timer = setTimeout(loop, wait);
      });
    };
    loop();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.running;
    this.agent.destroy();
  }

  /** One collection: list, scrape every node, store. Never throws. */
  async tick(): Promise<void> {
    const started = Date.now();
    this.lastTickStartedAt = started;
    this.metrics.lastTick.set(started / 1000);
    let nodes: NodeLike[];
    try {
      nodes = await this.opts.listNodes();
      this.lastNodes = nodes;
    } catch (err) {
      if (!this.lastNodes) {
        this.opts.log?.error({ err: errorText(err) }, 'Failed to list nodes');
        return;
      }
      // The API server (or its etcd) is down, not the kubelets: scrape the nodes of the last
      // list, as metrics-server keeps scraping from its node informer's cache. Stopping
      // would serve the last batch, unchanged and ageing, for the whole outage.
      this.opts.log?.error({ err: errorText(err) }, 'Failed to list nodes; using the last list');
      nodes = this.lastNodes;
    }
    const pods = await this.listPods();
    let token: string | undefined;
    try {
      token = await this.opts.bearerToken?.();
    } catch (err) {
      this.opts.log?.error({ err: errorText(err) }, 'Failed to read the kubelet bearer token');
    }
    // The tick's own deadline is one interval, as metrics-server's tick context.
    const tickSignal = AbortSignal.any([
      this.stopping.signal,
      AbortSignal.timeout(this.intervalMs),
    ]);
    // One listener per node request is expected, not a leak.
    setMaxListeners(0, tickSignal);
    const spreadMs = this.opts.stagger === false ? 0 : Math.min(8 * nodes.length, 4000);
    const results = await Promise.all(
      nodes.map(async (node) => {
        await sleep(Math.random() * spreadMs);
        return this.limit(() => this.scrapeNode(node, token, tickSignal));
      }),
    );
    // A stop mid-tick aborts requests; storing that partial batch would wipe good data.
    if (this.stopping.signal.aborted) return;
    const batch = this.merge(results, pods);
    this.opts.onBatch(batch);
    this.opts.log?.debug(
      {
        durationMs: Date.now() - started,
        nodeCount: batch.nodes.length,
        podCount: batch.pods.length,
      },
      'Scrape finished',
    );
  }

  private async listPods(): Promise<PodLike[] | undefined> {
    if (!this.opts.listPods) return undefined;
    try {
      this.lastPods = await this.opts.listPods();
    } catch (err) {
      this.opts.log?.error({ err: errorText(err) }, 'Failed to list pods; using the last list');
    }
    return this.lastPods;
  }

  private async scrapeNode(
    node: NodeLike,
    token: string | undefined,
    tickSignal: AbortSignal,
  ): Promise<NodeResult> {
    const name = node.metadata.name;
    const begin = process.hrtime.bigint();
    const requestStartMs = Date.now();
    let url = '';
    try {
      const target = kubeletTarget(
        node,
        this.opts.preferredAddressTypes ?? DEFAULT_ADDRESS_TYPES,
        this.opts.defaultPort ?? DEFAULT_KUBELET_PORT,
      );
      url = targetUrl(target);
      const deadline = AbortSignal.timeout(this.timeoutMs);
      const body = await fetchKubelet(target, {
        agent: this.agent,
        signal: AbortSignal.any([tickSignal, deadline]),
        maxBytes: this.opts.maxBodyBytes ?? 64 * 1024 * 1024,
        ...(token ? { token } : {}),
      }).catch((err: unknown) => {
        if (deadline.aborted) throw new TimeoutError(`GET "${url}": context deadline exceeded`);
        throw new Error(`GET "${url}": ${errorText(err)}`);
      });
      let decoded;
      try {
        decoded = decodeResourceMetrics(body, requestStartMs);
      } catch (err) {
        throw new Error(`failed parsing metrics: ${errorText(err)}`);
      }
      if (decoded.incompletePods.length > 0) {
        this.opts.log?.debug(
          { node: name, pods: decoded.incompletePods.length },
          'Failed getting complete Pod metric',
        );
      }
      if (!decoded.node)
        this.opts.log?.debug({ node: name }, 'Failed getting complete node metric');
      return {
        ...(decoded.node
          ? { node: { name, labels: node.metadata.labels ?? {}, point: decoded.node } }
          : {}),
        pods: decoded.pods,
      };
    } catch (err) {
      if (this.stopping.signal.aborted) return { pods: [] };
      this.metrics.failures.inc({ node: name });
      const msg =
        err instanceof TimeoutError
          ? 'Failed to scrape node, timeout to access kubelet'
          : 'Failed to scrape node';
      this.opts.log?.error({ node: name, err: errorText(err) }, msg);
      return { pods: [] };
    } finally {
      this.metrics.duration.observe(Number(process.hrtime.bigint() - begin) / 1e9);
    }
  }

  private merge(results: NodeResult[], pods: PodLike[] | undefined): MetricsBatch {
    const running = pods && podIndex(pods);
    const batch: MetricsBatch = { nodes: [], pods: [] };
    const seenNodes = new Set<string>();
    const seenPods = new Set<string>();
    for (const r of results) {
      if (r.node) {
        if (seenNodes.has(r.node.name))
          this.opts.log?.warn({ node: r.node.name }, 'Got duplicate node point');
        else {
          seenNodes.add(r.node.name);
          batch.nodes.push(r.node);
        }
      }
      for (const pod of r.pods) {
        const key = `${pod.namespace}/${pod.name}`;
        if (seenPods.has(key)) {
          this.opts.log?.warn({ pod: key }, 'Got duplicate pod point');
          continue;
        }
        seenPods.add(key);
        if (!running) {
          batch.pods.push(pod);
          continue;
        }
        const meta = running.get(key);
        if (meta) batch.pods.push({ ...pod, labels: meta.labels ?? {} });
      }
    }
    return batch;
  }
}

class TimeoutError extends Error {}

/** Running pods by namespace/name; a list without phases (metadata only) counts as running. */
function podIndex(pods: PodLike[]): Map<string, PodLike['metadata']> {
  const index = new Map<string, PodLike['metadata']>();
  for (const p of pods) {
    const phase = p.status?.phase;
    if (phase !== undefined && phase !== 'Running') continue;
    index.set(`${p.metadata.namespace ?? ''}/${p.metadata.name}`, p.metadata);
  }
  return index;
}

function errorText(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as NodeJS.ErrnoException).code;
    return code && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
  }
  return String(err);
}
