// The metrics-like group as the server mounts it: a source feeding the store, and the
// group declarations (annex's own, and optionally metrics.k8s.io) over its providers.
import { readFileSync } from 'node:fs';
import type { GroupVersionDecl } from '../apiserver/types.js';
import type { Config } from '../config/load.js';
import type { KubeClient } from '../kube/client.js';
import { fileToken } from '../kube/token.js';
import type { Logger } from '../log.js';
import {
  metricsGroups,
  metricsK8sIoGroup,
  startMetrics,
  type MetricsPipeline,
  type NodeLike,
  type PodLike,
} from './index.js';

const CLUSTER_CA = '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt';

export interface MetricsFeature {
  groups: GroupVersionDecl[];
  pipeline: MetricsPipeline;
}

export function startMetricsFeature(
  config: Config['metrics'],
  kube: KubeClient | null,
  log: Logger,
): MetricsFeature {
  const pipeline =
    config.source === 'local' ? startLocal(config, log) : startKubelet(config, kube, log);
  const { nodes, pods } = pipeline.store;
  const groups = [metricsGroups({ group: config.group, versions: ['v1beta1'], nodes, pods })];
  if (config.registerMetricsK8sIo) groups.push(metricsK8sIoGroup({ nodes, pods }));
  return { groups, pipeline };
}

function startLocal(config: Config['metrics'], log: Logger): MetricsPipeline {
  return startMetrics({
    source: 'local',
    intervalSeconds: config.scrapeIntervalSeconds,
    local: { namespace: config.localNamespace },
    log,
  });
}

function startKubelet(
  config: Config['metrics'],
  kube: KubeClient | null,
  log: Logger,
): MetricsPipeline {
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
  return startMetrics({
    source: 'kubelet',
    intervalSeconds: config.scrapeIntervalSeconds,
    kubelet: {
      listNodes: async () => (await kube.list<NodeLike>('/api/v1/nodes')).items,
      listPods: async () =>
        (await kube.list<PodLike>('/api/v1/pods', { fieldSelector: 'status.phase=Running' })).items,
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
  });
}
