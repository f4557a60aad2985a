// The samples a source hands to the store: one cumulative point per node and per container,
// in the units metrics-server keeps (core-nanoseconds, bytes, nanosecond times).

export interface MetricsPoint {
  /** Container start, ns since the epoch; 0n when unknown (nodes, kubelets before 1.22). */
  startNs: bigint;
  /** When the source took the sample, ns since the epoch. */
  tsNs: bigint;
  /** Cumulative CPU time, core-nanoseconds. */
  cpuNs: bigint;
  /** Working set, whole bytes. */
  memory: number;
}

export interface NodeSample {
  name: string;
  labels?: Record<string, string>;
  point: MetricsPoint;
}

export interface PodSample {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  /** Container name → point. */
  containers: Map<string, MetricsPoint>;
}

/** Everything one collection tick saw. The store is rebuilt from it: absent means gone. */
export interface MetricsBatch {
  nodes: NodeSample[];
  pods: PodSample[];
}

/** Go's float→uint conversion as metrics-server relies on it: truncate; junk becomes 0. */
export function truncUnsigned(value: number): number {
  return Number.isFinite(value) && value > 0 ? Math.trunc(value) : 0;
}

/** Seconds (float) → whole nanoseconds, truncated in float64 first as Go does. */
export function secondsToNs(seconds: number): bigint {
  return BigInt(truncUnsigned(seconds * 1e9));
}

export const msToNs = (ms: number): bigint => BigInt(Math.trunc(ms)) * 1_000_000n;
