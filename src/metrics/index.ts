// Public surface of the metrics module, and the one function that wires a source to the
// store: the server calls startMetrics() and declares metricsGroups() over its providers.
import type { Logger } from '../log.js';
import { KubeletScraper, type KubeletScraperOptions } from './kubelet-scraper.js';
import { LocalSource, type LocalSourceOptions } from './local-source.js';
import { MetricsStore } from './storage.js';

export { MetricsStore, resourceUsage } from './storage.js';
export type { NodeMetrics, PodMetrics, StoreOptions, Usage } from './storage.js';
export { KubeletScraper } from './kubelet-scraper.js';
export type { KubeletScraperOptions, NodeLike, PodLike } from './kubelet-scraper.js';
export { DEFAULT_ADDRESS_TYPES, kubeletTarget, validateKubeletTls } from './kubelet-client.js';
export type { KubeletTls } from './kubelet-client.js';
export { LocalSource } from './local-source.js';
export type { LocalSourceOptions } from './local-source.js';
export {
  DEFAULT_GROUP,
  METRICS_K8S_IO,
  metricsGroups,
  metricsK8sIoGroup,
  podUsageTotals,
} from './group.js';
export { nodeMetricsSchema, podMetricsSchema } from './schema.js';
export { formatCpu, formatMemory, parseQuantity } from '../apiserver/quantity.js';
export type { MetricsBatch, MetricsPoint, NodeSample, PodSample } from './points.js';

export type MetricsPipelineOptions =
  | {
      source: 'local';
      intervalSeconds: number;
      local?: Omit<LocalSourceOptions, 'onBatch' | 'intervalSeconds' | 'log'>;
      log?: Logger;
      /** The store to feed (default: a new one); lets a group be declared before the source starts. */
      store?: MetricsStore;
    }
  | {
      source: 'kubelet';
      intervalSeconds: number;
      kubelet: Omit<KubeletScraperOptions, 'onBatch' | 'intervalSeconds' | 'log'>;
      log?: Logger;
      store?: MetricsStore;
    };

export interface MetricsPipeline {
  store: MetricsStore;
  /** Readiness as metrics-server: ≥1 node and ≥1 pod have two points. */
  ready(): boolean;
  /** Liveness: a collection tick started within 1.5 intervals (kubelet source). */
  live(): boolean;
  stop(): Promise<void>;
}

export function startMetrics(opts: MetricsPipelineOptions): MetricsPipeline {
  const intervalMs = opts.intervalSeconds * 1000;
  const store =
    opts.store ??
    new MetricsStore({ resolutionMs: intervalMs, ...(opts.log ? { log: opts.log } : {}) });
  const onBatch = store.store.bind(store);
  const log = opts.log ? { log: opts.log } : {};
  if (opts.source === 'local') {
    const local = new LocalSource({
      ...opts.local,
      ...log,
      onBatch,
      intervalSeconds: opts.intervalSeconds,
    });
    local.start();
    return {
      store,
      ready: () => store.ready(),
      live: () => true,
      stop: async () => local.stop(),
    };
  }
  const scraper = new KubeletScraper({
    ...opts.kubelet,
    ...log,
    onBatch,
    intervalSeconds: opts.intervalSeconds,
  });
  scraper.start();
  return {
    store,
    ready: () => store.ready(),
    live: () =>
      scraper.lastTickStartedAt === undefined ||
      Date.now() - scraper.lastTickStartedAt < 1.5 * intervalMs,
    stop: () => scraper.stop(),
  };
}
