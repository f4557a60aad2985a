import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import type { StatusError } from '../core/status.js';
import type { WatchEvent } from '../core/types.js';
import { decodeResourceMetrics } from './decode.js';
import type { MetricsBatch, MetricsPoint } from './points.js';
import { MetricsStore, resourceUsage } from './storage.js';

const read = (f: string) => readFileSync(new URL(`./fixtures/${f}`, import.meta.url), 'utf8');
const bodyA = read('kubelet-resource-metrics-a.txt');
const bodyB = read('kubelet-resource-metrics.txt');

function batchOf(body: string, labels = { 'kubernetes.io/hostname': 'worker-1' }): MetricsBatch {
  const d = decodeResourceMetrics(body, 0);
  return {
    nodes: d.node ? [{ name: 'worker-1', labels, point: d.node }] : [],
    pods: d.pods.map((p) => ({ ...p, labels: { app: p.name.split('-')[0] ?? '' } })),
  };
}

const NOW = Date.parse('2026-01-01T00:00:20.500Z');
const newStore = (resolutionMs = 15_000, historyLimit?: number) =>
  new MetricsStore({ resolutionMs, now: () => NOW, ...(historyLimit ? { historyLimit } : {}) });

const point = (s: number, ts: number, cpuS: number, mem = 1024): MetricsPoint => ({
  startNs: BigInt(s) * 1_000_000_000n,
  tsNs: BigInt(ts) * 1_000_000_000n,
  cpuNs: BigInt(Math.round(cpuS * 1e9)),
  memory: mem,
});
const podBatch = (containers: Record<string, MetricsPoint>, nodeTs = 100): MetricsBatch => ({
  nodes: [{ name: 'n', point: point(0, nodeTs, nodeTs) }],
  pods: [{ namespace: 'ns', name: 'p', containers: new Map(Object.entries(containers)) }],
});

describe('MetricsStore: the reference worked example (kubelet-metrics.md §2.8)', () => {
  it('serves nothing after one scrape and everything after two', async () => {
    const store = newStore();
    store.store(batchOf(bodyA));
    expect((await store.nodes.snapshot()).items).toEqual([]);
    expect((await store.pods.snapshot()).items).toEqual([]);
    expect(store.ready()).toBe(false);

    store.store(batchOf(bodyB));
    expect(store.ready()).toBe(true);
    const nodes = await store.nodes.snapshot();
    expect(nodes.items).toEqual([
      {
        kind: 'NodeMetrics',
        apiVersion: 'metrics.annex.dev/v1beta1',
        metadata: {
          name: 'worker-1',
          resourceVersion: '1',
          creationTimestamp: '2026-01-01T00:00:20Z',
          labels: { 'kubernetes.io/hostname': 'worker-1' },
        },
        timestamp: '2026-01-01T00:00:13Z',
        window: '15.013s',
        usage: { cpu: '249957861n', memory: '2786616Ki' },
      },
    ]);
    const pods = (await store.pods.snapshot()).items;
    expect(pods.map((p) => `${p.metadata.namespace}/${p.metadata.name}`)).toEqual([
      'default/web-6f9c7d5b8d-k2x7p',
      'kube-system/coredns-76f75df574-9qz5m',
    ]);
    expect(pods[0]).toMatchObject({
      kind: 'PodMetrics',
      metadata: { labels: { app: 'web' } },
      timestamp: '2026-01-01T00:00:11Z',
      window: '15.014s',
      containers: [
        { name: 'log-shipper', usage: { cpu: '5616381n', memory: '17836Ki' } },
        { name: 'nginx', usage: { cpu: '37852131n', memory: '40872Ki' } },
      ],
    });
    expect(pods[1]).toMatchObject({
      timestamp: '2026-01-01T00:00:16Z',
      window: '15.006s',
      containers: [{ name: 'coredns', usage: { cpu: '7380828n', memory: '23412Ki' } }],
    });
  });

  it('keeps the window when the kubelet repeats a stale sample', async () => {
    const store = newStore();
    store.store(batchOf(bodyA));
    store.store(batchOf(bodyB));
    const rv = store.resourceVersion;
    store.store(batchOf(bodyB));
    const [node] = (await store.nodes.snapshot()).items;
    expect(node).toMatchObject({ window: '15.013s', usage: { cpu: '249957861n' } });
    expect(store.resourceVersion).toBe(rv); // nothing changed, no events
  });

  it('does not serve a node whose first two samples are identical', async () => {
    const store = newStore();
    store.store(batchOf(bodyA));
    store.store(batchOf(bodyA));
    expect((await store.nodes.snapshot()).items).toEqual([]);
  });

  it('removes a node missing from a batch at once; it needs two scrapes to return', async () => {
    const store = newStore();
    store.store(batchOf(bodyA));
    store.store(batchOf(bodyB));
    store.store({ nodes: [], pods: [] });
    expect((await store.nodes.snapshot()).items).toEqual([]);
    expect(store.ready()).toBe(false);
    store.store(batchOf(bodyB));
    expect((await store.nodes.snapshot()).items).toEqual([]);
  });
});

describe('MetricsStore: restarts and fresh containers', () => {
  it('a container restart (start after the stored sample) hides the pod for one scrape', async () => {
    const store = newStore();
    store.store(podBatch({ c: point(0, 100, 10) }, 100));
    store.store(podBatch({ c: point(0, 115, 11) }, 115));
    expect((await store.pods.snapshot()).items).toHaveLength(1);
    store.store(podBatch({ c: point(125, 130, 0.5) }, 130)); // restarted at 125, after 115
    expect((await store.pods.snapshot()).items).toHaveLength(0);
    store.store(podBatch({ c: point(125, 145, 2) }, 145));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({ window: '15s', containers: [{ usage: { cpu: '100m' } }] });
  });

  it('a counter decrease skips the container but still returns the pod, as metrics-server', async () => {
    const store = newStore();
    store.store(podBatch({ c: point(0, 100, 10) }, 100));
    store.store(podBatch({ c: point(0, 115, 5) }, 115));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({ timestamp: null, window: '0s', containers: [] });
    // The next pair is valid again.
    store.store(podBatch({ c: point(0, 130, 6.5) }, 130));
    expect((await store.pods.snapshot()).items[0]).toMatchObject({
      containers: [{ usage: { cpu: '100m' } }],
    });
  });

  it('a node whose CPU counter went backwards (reboot) is skipped', async () => {
    const store = newStore();
    store.store({ nodes: [{ name: 'n', point: point(0, 100, 500) }], pods: [] });
    store.store({ nodes: [{ name: 'n', point: point(0, 115, 3) }], pods: [] });
    expect((await store.nodes.snapshot()).items).toEqual([]);
  });

  it('a restart 10 s to one resolution before the sample is measured from the start', async () => {
    const store = newStore();
    store.store(podBatch({ c: point(0, 100, 10) }, 100));
    store.store(podBatch({ c: point(0, 115, 11) }, 115));
    store.store(podBatch({ c: point(120, 130, 0.5) }, 130));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({ window: '10s', containers: [{ usage: { cpu: '50m' } }] });
  });

  it('serves a container 10 s to one resolution old after one scrape', async () => {
    const store = newStore(15_000);
    store.store(podBatch({ c: point(100, 112, 3) }));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({ window: '12s', containers: [{ usage: { cpu: '250m' } }] });
  });

  it('not when younger than 10 s', async () => {
    const store = newStore(15_000);
    store.store(podBatch({ c: point(100, 109, 3) }));
    expect((await store.pods.snapshot()).items).toEqual([]);
  });

  it('omits a pod until every container has two points, and takes the earliest container time', async () => {
    const store = newStore();
    store.store(podBatch({ a: point(0, 100, 1) }));
    store.store(podBatch({ a: point(0, 110, 2), b: point(0, 105, 1) }));
    expect((await store.pods.snapshot()).items).toEqual([]);
    store.store(podBatch({ a: point(0, 120, 3), b: point(0, 125, 3) }));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({
      timestamp: '1970-01-01T00:02:00Z',
      window: '10s',
      containers: [
        { name: 'a', usage: { cpu: '100m' } },
        { name: 'b', usage: { cpu: '100m' } },
      ],
    });
  });
});

describe('resourceUsage', () => {
  it('truncates the rate: 200 core-ns over 10 ms is 20000n', () => {
    const prev = { startNs: 0n, tsNs: 0n, cpuNs: 0n, memory: 1 };
    const last = { startNs: 0n, tsNs: 10_000_000n, cpuNs: 200n, memory: 3 };
    expect(resourceUsage(last, prev)).toEqual({
      usage: { cpu: '20u', memory: '3' },
      time: { tsNs: 10_000_000n, windowNs: 10_000_000n },
    });
  });
});

describe('MetricsStore: resourceVersion and watch', () => {
  it('emits ADDED, MODIFIED and DELETED with increasing resourceVersions', async () => {
    const store = newStore();
    const events: [string, string, string][] = [];
    store.nodes.subscribe?.('', (e: WatchEvent, rv) =>
      events.push([e.type, e.object.metadata.name, rv]),
    );
    store.store(batchOf(bodyA));
    store.store(batchOf(bodyB));
    store.store({
      ...batchOf(bodyB),
      nodes: [{ ...batchOf(bodyB).nodes[0]!, labels: { x: 'y' } }],
    });
    store.store({ nodes: [], pods: [] });
    expect(events).toEqual([
      ['ADDED', 'worker-1', '1'],
      ['MODIFIED', 'worker-1', '4'],
      ['DELETED', 'worker-1', '5'],
    ]);
  });

  it('replays events after a resourceVersion, then delivers live ones', async () => {
    const store = newStore();
    store.store(batchOf(bodyA));
    store.store(batchOf(bodyB)); // rv 1 node, 2-3 pods
    const snap = await store.pods.snapshot();
    expect(snap.resourceVersion).toBe('3');
    // Sorted by namespace: default/web (rv 3) before kube-system/coredns (rv 2).
    expect(snap.items.map((i) => i.metadata.resourceVersion)).toEqual(['3', '2']);
    const seen: string[] = [];
    const stop = store.pods.subscribe!('2', (e, rv) => seen.push(`${e.type}:${rv}`));
    expect(seen).toEqual(['ADDED:3']);
    store.store({ nodes: [], pods: [] });
    expect(seen).toEqual(['ADDED:3', 'DELETED:5', 'DELETED:6']);
    stop();
    store.store(batchOf(bodyB));
    expect(seen).toHaveLength(3);
  });

  it('answers 410 Expired for a resourceVersion older than the kept history, 400 for junk', () => {
    const store = newStore(15_000, 2);
    for (let t = 0; t < 6; t++) {
      store.store({ nodes: [{ name: 'n', point: point(0, 100 + t * 15, t + 1) }], pods: [] });
    }
    // Events at rv 1..5 (ADDED then MODIFIED); with room for 2 (+25 %), rv 1-3 were dropped.
    expect(() => store.nodes.subscribe!('1', () => {})).toThrow(/too old resource version: 1/);
    try {
      store.nodes.subscribe!('0', () => {});
      expect.unreachable();
    } catch (err) {
      expect((err as StatusError).status).toMatchObject({ code: 410, reason: 'Expired' });
    }
    expect(() => store.nodes.subscribe!('3', () => {})).not.toThrow();
    expect(() => store.nodes.subscribe!('abc', () => {})).toThrow(/invalid resource version/);
  });

  it('a throwing listener does not break the store', () => {
    const store = newStore();
    store.nodes.subscribe!('', () => {
      throw new Error('boom');
    });
    store.store(batchOf(bodyA));
    expect(() => store.store(batchOf(bodyB))).not.toThrow();
  });
});

describe('MetricsStore: history capacity', () => {
  it('keeps at least two full updates of a large resource', () => {
    const store = newStore(15_000, 2);
    const batch = (t: number): MetricsBatch => ({
      nodes: ['a', 'b', 'c', 'd'].map((name) => ({ name, point: point(0, 100 + 15 * t, t + 1) })),
      pods: [],
    });
    for (let t = 0; t < 4; t++) store.store(batch(t));
    // rv 1-4 ADDED, 5-8 and 9-12 MODIFIED: with room for 8 (+25 %), resuming at 4 still works.
    expect(() => store.nodes.subscribe!('4', () => {})).not.toThrow();
    expect(() => store.nodes.subscribe!('1', () => {})).toThrow(/too old/);
  });
});
