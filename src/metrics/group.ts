// The metrics-like API group as a declaration for the generic aggregated-API framework:
// NodeMetrics (cluster-scoped, `nodes`) and PodMetrics (namespaced, `pods`), with
// metrics-server's Table columns, served under annex's own group or as metrics.k8s.io.
import type {
  GroupVersionDecl,
  KubeObject,
  Provider,
  ResourceDecl,
  Snapshot,
  TableColumn,
  WatchEvent,
} from '../core/types.js';
import {
  formatCpu,
  formatMemory,
  parseBytes,
  parseNanocores,
  topCpu,
  topMemory,
} from '../apiserver/quantity.js';
import { nodeMetricsSchema, podMetricsSchema } from './schema.js';

export const DEFAULT_GROUP = 'metrics.annex.dev';
export const METRICS_K8S_IO = 'metrics.k8s.io';

export interface MetricsGroupOptions {
  /** Default metrics.annex.dev. */
  group?: string;
  /** Served versions, preferred first. Default ['v1beta1']. */
  versions?: string[];
  nodes: Provider;
  pods: Provider;
}

// metrics-server's pkg/api/table.go: Name, one column per resource (sorted), Window.
const nameColumn: TableColumn = {
  name: 'Name',
  type: 'string',
  format: 'name',
  description: 'Name of the resource',
  jsonPath: '$.metadata.name',
  priority: 0,
};
const windowColumn: TableColumn = {
  name: 'Window',
  type: 'string',
  format: 'duration',
  description: 'Time between the two samples the CPU rate was computed from',
  jsonPath: '$.window',
  priority: 0,
};

const usageOf = (o: KubeObject) => (o.usage ?? {}) as { cpu?: string; memory?: string };

// Table cells read as `kubectl top` prints them (1978m, 1301Mi); the objects keep the exact
// quantities metrics-server reports (1977465164n, 1332896Ki).
export const nodeColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'cpu',
    type: 'string',
    format: 'quantity',
    description: 'Average CPU usage over the window',
    jsonPath: '$.usage.cpu',
    value: (node) => topCpu(parseNanocores(usageOf(node).cpu ?? '0')),
    priority: 0,
  },
  {
    name: 'memory',
    type: 'string',
    format: 'quantity',
    description: 'Memory working set',
    jsonPath: '$.usage.memory',
    value: (node) => topMemory(parseBytes(usageOf(node).memory ?? '0')),
    priority: 0,
  },
  windowColumn,
];

// metrics-server's pod rows sum the containers' usage; a JSONPath cannot sum, so these
// cells are computed (the paths still name the fields the sums come from).
export const podColumns: TableColumn[] = [
  nameColumn,
  {
    name: 'cpu',
    type: 'string',
    format: 'quantity',
    description: 'Average CPU usage over the window, summed over the containers',
    jsonPath: '$.containers[*].usage.cpu',
    value: (pod) => topCpu(parseNanocores(podUsageTotals(pod).cpu)),
    priority: 0,
  },
  {
    name: 'memory',
    type: 'string',
    format: 'quantity',
    description: 'Memory working set, summed over the containers',
    jsonPath: '$.containers[*].usage.memory',
    value: (pod) => topMemory(parseBytes(podUsageTotals(pod).memory)),
    priority: 0,
  },
  windowColumn,
];

/** Sum of a PodMetrics' container usage, formatted as metrics-server's pod Table rows. */
export function podUsageTotals(pod: KubeObject): { cpu: string; memory: string } {
  let cpu = 0n;
  let memory = 0n;
  const containers = (pod.containers ?? []) as { usage?: { cpu?: string; memory?: string } }[];
  for (const c of containers) {
    cpu += parseNanocores(c.usage?.cpu ?? '0');
    memory += parseBytes(c.usage?.memory ?? '0');
  }
  return { cpu: formatCpu(cpu), memory: formatMemory(memory) };
}

/** Objects carry the apiVersion of the group they are served under. */
export function withApiVersion(provider: Provider, apiVersion: string): Provider {
  const stamp = (o: KubeObject): KubeObject =>
    o.apiVersion === apiVersion ? o : { ...o, apiVersion };
  // One stamped copy per resourceVersion: the objects keep their identity across lists,
  // and with it their served encoding.
  let last: Snapshot | undefined;
  const wrapped: Provider = {
    snapshot: async () => {
      const s = await provider.snapshot();
      if (last?.resourceVersion !== s.resourceVersion) {
        last = { resourceVersion: s.resourceVersion, items: s.items.map(stamp) };
      }
      return { resourceVersion: last.resourceVersion, items: last.items.slice() };
    },
  };
  const subscribe = provider.subscribe?.bind(provider);
  if (subscribe) {
    wrapped.subscribe = (rv, onEvent) =>
      subscribe(rv, (e: WatchEvent, eventRv) =>
        onEvent({ ...e, object: stamp(e.object) }, eventRv),
      );
  }
  return wrapped;
}

function resources(
  group: string,
  version: string,
  nodes: Provider,
  pods: Provider,
  singular: boolean,
): ResourceDecl[] {
  const apiVersion = `${group}/${version}`;
  return [
    {
      kind: 'NodeMetrics',
      plural: 'nodes',
      singular: singular ? 'nodemetrics' : '',
      namespaced: false,
      verbs: ['get', 'list', 'watch'],
      schema: nodeMetricsSchema,
      columns: nodeColumns,
      provider: withApiVersion(nodes, apiVersion),
      creationTimestampIsNow: true,
    },
    {
      kind: 'PodMetrics',
      plural: 'pods',
      singular: singular ? 'podmetrics' : '',
      namespaced: true,
      verbs: ['get', 'list', 'watch'],
      schema: podMetricsSchema,
      columns: podColumns,
      provider: withApiVersion(pods, apiVersion),
      creationTimestampIsNow: true,
    },
  ];
}

/** annex's own metrics group (default metrics.annex.dev/v1beta1). */
export function metricsGroups(opts: MetricsGroupOptions): GroupVersionDecl {
  const group = opts.group ?? DEFAULT_GROUP;
  const versions = opts.versions ?? ['v1beta1'];
  if (versions.length === 0) throw new Error('metrics group: at least one version is required');
  return {
    group,
    versions,
    resources: resources(group, versions[0] as string, opts.nodes, opts.pods, true),
    apiService: {
      description: `Registers annex's metrics-like group with the aggregation layer. The API server dials
the Service annex.annex-system and checks the certificate for annex.annex-system.svc
against caBundle (annex injects it: tls.inject, or \`annex certs inject\`).`,
    },
  };
}

/**
 * The same data as metrics.k8s.io v1beta1 and v1, so an unmodified `kubectl top` works where
 * metrics-server is absent. singularName stays empty, as metrics-server publishes it;
 * kubectl still resolves `nodemetrics` from the kind.
 */
export function metricsK8sIoGroup(opts: Omit<MetricsGroupOptions, 'group'>): GroupVersionDecl {
  const versions = opts.versions ?? ['v1beta1', 'v1'];
  if (versions.length === 0) throw new Error('metrics group: at least one version is required');
  return {
    group: METRICS_K8S_IO,
    versions,
    resources: resources(METRICS_K8S_IO, versions[0] as string, opts.nodes, opts.pods, false),
    apiService: {
      // kubectl prefers v1 (KEP-5207); the aggregator converts nothing, so both are registered.
      versionPriority: { v1: 200, v1beta1: 100 },
      shared: true,
      description: `Registers annex as metrics.k8s.io (config: metrics.registerMetricsK8sIo: true), so that an
unmodified \`kubectl top node|pod\` and the HPA work where metrics-server is absent. Where
metrics-server (or minikube's metrics-server addon) serves the group, annex leaves it alone
and says so in /readyz?verbose, unless registration.replaceOwners lists metrics.k8s.io. Both versions are registered, as KEP-5207 recommends from
Kubernetes 1.37 on (kubectl prefers v1; the aggregator converts nothing, so an unregistered
version is a 404).`,
    },
  };
}
