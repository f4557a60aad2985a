// One kubelet /metrics/resource body → one node point and its pods' container points, with
// metrics-server's selection and validity rules (kubelet-metrics.md §2.2): five families
// only, conversions truncate, an incomplete node or pod is dropped from this scrape.
import { parsePrometheusText } from './prometheus-text.js';
import { msToNs, secondsToNs, truncUnsigned, type MetricsPoint } from './points.js';

const NODE_CPU = 'node_cpu_usage_seconds_total';
const NODE_MEMORY = 'node_memory_working_set_bytes';
const CONTAINER_CPU = 'container_cpu_usage_seconds_total';
const CONTAINER_MEMORY = 'container_memory_working_set_bytes';
const CONTAINER_START = 'container_start_time_seconds';
const WANTED = new Set([NODE_CPU, NODE_MEMORY, CONTAINER_CPU, CONTAINER_MEMORY, CONTAINER_START]);

export interface DecodedPod {
  namespace: string;
  name: string;
  containers: Map<string, MetricsPoint>;
}

export interface DecodedNode {
  /** Absent when the node's CPU, memory or timestamp is missing or zero. */
  node?: MetricsPoint;
  pods: DecodedPod[];
  /** `namespace/name` of pods dropped because a container lacked CPU or memory. */
  incompletePods: string[];
}

const emptyPoint = (): MetricsPoint => ({ startNs: 0n, tsNs: 0n, cpuNs: 0n, memory: 0 });

/**
 * Decode a body. `requestStartMs` stamps samples that carry no timestamp, as metrics-server
 * uses the request start time. Throws ParseError on any syntax error (the node then fails).
 */
export function decodeResourceMetrics(body: string, requestStartMs: number): DecodedNode {
  const node = emptyPoint();
  const pods = new Map<string, DecodedPod>();
  for (const s of parsePrometheusText(body, WANTED)) {
    const tsNs = msToNs(s.timestampMs ?? requestStartMs);
    if (s.name === NODE_CPU) {
      node.cpuNs = secondsToNs(s.value);
      node.tsNs = tsNs;
    } else if (s.name === NODE_MEMORY) {
      node.memory = truncUnsigned(s.value);
      node.tsNs = tsNs;
    } else {
      const { namespace, pod, container } = s.labels;
      if (!namespace || !pod || container === undefined) continue;
      const key = `${namespace}/${pod}`;
      let entry = pods.get(key);
      if (!entry) {
        entry = { namespace, name: pod, containers: new Map() };
        pods.set(key, entry);
      }
      let point = entry.containers.get(container);
      if (!point) {
        point = emptyPoint();
        entry.containers.set(container, point);
      }
      if (s.name === CONTAINER_CPU) {
        point.cpuNs = secondsToNs(s.value);
        point.tsNs = tsNs;
      } else if (s.name === CONTAINER_MEMORY) {
        point.memory = truncUnsigned(s.value);
        point.tsNs = tsNs;
      } else {
        // The start time's own timestamp (1.22–1.28) is ignored; only its value matters.
        // A finite value can still overflow in nanoseconds: unknown (0), not a failed node.
        const ns = s.value * 1e9;
        point.startNs = BigInt(Math.trunc(Number.isFinite(ns) ? ns : 0));
      }
    }
  }
  const result: DecodedNode = { pods: [], incompletePods: [] };
  if (node.tsNs !== 0n && node.cpuNs !== 0n && node.memory !== 0) result.node = node;
  for (const [key, pod] of pods) {
    const complete = [...pod.containers.values()].every((c) => c.cpuNs !== 0n && c.memory !== 0);
    if (complete) result.pods.push(pod);
    else result.incompletePods.push(key);
  }
  return result;
}
