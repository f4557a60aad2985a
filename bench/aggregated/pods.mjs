// Synthetic scrapes for the aggregated-API bench: `pods` PodMetrics (2 containers each) over
// `nodes` nodes, in the units a source hands to annex's MetricsStore.

const HOUR_NS = 3_600_000_000_000n;
const SCRAPE_NS = 15_000_000_000n;

/**
 * One scrape at `tsNs`. `bump` (pod index → bytes) changes one pod's memory so that a
 * re-stored scrape makes exactly one watch event.
 */
export function batch(pods, nodes, tsNs, cpuNs, bump = new Map()) {
  const startNs = tsNs - HOUR_NS;
  const point = (cpu, memory) => ({ startNs, tsNs, cpuNs: cpu, memory });
  return {
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `node-${i}`,
      labels: { 'kubernetes.io/hostname': `node-${i}` },
      point: point(cpuNs * 40n, 4 * 2 ** 30),
    })),
    pods: Array.from({ length: pods }, (_, i) => ({
      namespace: `ns-${i % 100}`,
      name: `pod-${String(i).padStart(5, '0')}`,
      labels: { app: `app-${i % 50}` },
      containers: new Map([
        ['main', point(cpuNs + BigInt(i), 100 * 2 ** 20 + i * 4096 + (bump.get(i) ?? 0))],
        ['sidecar', point(cpuNs / 4n, 20 * 2 ** 20)],
      ]),
    })),
  };
}

/** Two scrapes 15 s apart make every rate (the store needs two points per container). */
export function fill(store, pods, nodes, nowMs = Date.now()) {
  const now = BigInt(nowMs) * 1_000_000n;
  store.store(batch(pods, nodes, now - SCRAPE_NS, 1_000_000_000_000n));
  const last = { tsNs: now, cpuNs: 1_003_750_000_000n };
  store.store(batch(pods, nodes, last.tsNs, last.cpuNs));
  return last;
}
