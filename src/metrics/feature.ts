// The metrics-like group as a Feature: the group declarations (annex's own, and
// optionally metrics.k8s.io) over a store, and a source (this machine, or every
// kubelet) that feeds it once the server starts. Ready, as metrics-server, once it holds data.
import { readFileSync } from 'node:fs';
import type { Feature, FeatureContext } from '../core/feature.js';
import type { MetricsConfig } from './config.js';
import type { KubeList, Query } from '../kube/client.js';
import { fileToken } from '../kube/token.js';
import {
  metricsGroups,
  metricsK8sIoGroup,
  MetricsStore,
  startMetrics,
  type MetricsPipeline,
  type NodeLike,
  type PodLike,
} from './index.js';

const CLUSTER_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

/** Built from its section (`metrics:`, ./config.ts): the groups it declares depend on it. */
export function metricsFeature(config: MetricsConfig): Feature {
  const store = new MetricsStore({ resolutionMs: config.scrapeIntervalSeconds * 1000 });
  const { nodes, pods } = store;
  const groups = [metricsGroups({ group: config.group, versions: ['v1beta1'], nodes, pods })];
  if (config.registerMetricsK8sIo) groups.push(metricsK8sIoGroup({ nodes, pods }));
  let pipeline: MetricsPipeline | undefined;
  return {
    name: 'metrics',
    groups,
    start: (ctx) => {
      pipeline =
        config.source === 'local'
          ? startLocal(config, store, ctx)
          : startKubelet(config, store, ctx);
    },
    stop: () => pipeline?.stop(),
    ready: () => store.ready() || 'no node and pod metrics collected yet',
  };
}

function startLocal(config: MetricsConfig, store: MetricsStore, { log }: FeatureContext) {
  return startMetrics({
    source: 'local',
    intervalSeconds: config.scrapeIntervalSeconds,
    local: { namespace: config.localNamespace },
    log,
    store,
  });
}

function startKubelet(config: MetricsConfig, store: MetricsStore, { kube, log }: FeatureContext) {
  if (!kube) {
    throw new Error(
      'metrics.source "kubelet" needs an API server: set kube.kubeconfig or run in a cluster',
    );
  }
  const k = config.kubelet;
  const read = (f: string) => readFileSync(f, 'utf8');
  const ca = k.caFile
    ? read(k.caFile)
    : !k.insecureSkipTLSVerify && process.env.KUBERNETES_SERVICE_HOST
      ? read(CLUSTER_CA)
      : undefined;
  // A list that hangs (etcd down behind a live API server) must not hold up the tick: past
  // half an interval the scraper goes on with the last list. The budget is per pause, so a
  // large list that keeps streaming is not cut.
  const timeoutMs = Math.min(kube.timeoutMs, (config.scrapeIntervalSeconds * 1000) / 2);
  const list = async <T>(path: string, query?: Query) =>
    (await kube.request<KubeList<T>>('GET', path, { query, timeoutMs })).items;
  return startMetrics({
    source: 'kubelet',
    intervalSeconds: config.scrapeIntervalSeconds,
    kubelet: {
      listNodes: () => list<NodeLike>('/api/v1/nodes'),
      listPods: () => list<PodLike>('/api/v1/pods', { fieldSelector: 'status.phase=Running' }),
      timeoutSeconds: k.timeoutSeconds,
      concurrency: k.concurrency,
      preferredAddressTypes: k.preferredAddressTypes,
      tls: {
        ...(ca ? { ca } : {}),
        insecureSkipTLSVerify: k.insecureSkipTLSVerify,
        ...(k.clientCertFile ? { cert: read(k.clientCertFile), key: read(k.clientKeyFile) } : {}),
      },
      ...(k.tokenFile ? { bearerToken: fileToken(k.tokenFile) } : {}),
    },
    log,
    store,
  });
}
