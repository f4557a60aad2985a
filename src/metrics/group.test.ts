import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { describe, it, expect } from 'vitest';
import { toTable } from '../apiserver/table.js';
import type { KubeObject, WatchEvent } from '../core/types.js';
import { decodeResourceMetrics } from './decode.js';
import { metricsGroups, metricsK8sIoGroup, podUsageTotals } from './group.js';
import type { MetricsBatch, MetricsPoint } from './points.js';
import { nodeMetricsSchema, podMetricsSchema } from './schema.js';
import { MetricsStore } from './storage.js';

const read = (f: string) => readFileSync(new URL(`./fixtures/${f}`, import.meta.url), 'utf8');
function batchOf(body: string): MetricsBatch {
  const d = decodeResourceMetrics(body, 0);
  return {
    nodes: d.node ? [{ name: 'worker-1', labels: { zone: 'a' }, point: d.node }] : [],
    pods: d.pods.map((p) => ({ ...p, labels: { app: 'x' } })),
  };
}

function filledStore(): MetricsStore {
  const store = new MetricsStore({ resolutionMs: 15_000 });
  store.store(batchOf(read('kubelet-resource-metrics-a.txt')));
  store.store(batchOf(read('kubelet-resource-metrics.txt')));
  return store;
}

const ajv = new Ajv({ allErrors: true }); // strict by default: the schemas must compile cleanly
const validNode = ajv.compile(nodeMetricsSchema);
const validPod = ajv.compile(podMetricsSchema);

describe('schemas', () => {
  it('accept what the store produces', async () => {
    const store = filledStore();
    const nodes = (await store.nodes.snapshot()).items;
    const pods = (await store.pods.snapshot()).items;
    expect(nodes).toHaveLength(1);
    expect(pods).toHaveLength(2);
    for (const n of nodes) expect(validNode(n), JSON.stringify(validNode.errors)).toBe(true);
    for (const p of pods) expect(validPod(p), JSON.stringify(validPod.errors)).toBe(true);
  });

  it('accept the null timestamp of a pod whose containers were all skipped', async () => {
    const store = new MetricsStore({ resolutionMs: 15_000 });
    const pt = (ts: number, cpu: bigint): MetricsPoint => ({
      startNs: 0n,
      tsNs: BigInt(ts) * 1_000_000_000n,
      cpuNs: cpu,
      memory: 4096,
    });
    const b = (ts: number, cpu: bigint): MetricsBatch => ({
      nodes: [],
      pods: [{ namespace: 'n', name: 'p', containers: new Map([['c', pt(ts, cpu)]]) }],
    });
    store.store(b(100, 50n));
    store.store(b(115, 10n));
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod?.timestamp).toBeNull();
    expect(validPod(pod)).toBe(true);
  });

  it('reject wrong shapes', () => {
    const good = {
      kind: 'NodeMetrics',
      apiVersion: 'metrics.k8s.io/v1beta1',
      metadata: { name: 'n' },
      timestamp: '2026-01-01T00:00:00Z',
      window: '15s',
      usage: { cpu: '1', memory: '1Ki' },
    };
    expect(validNode(good)).toBe(true);
    expect(validNode({ ...good, usage: { cpu: '1 core', memory: '1Ki' } })).toBe(false);
    expect(validNode({ ...good, usage: { cpu: '1' } })).toBe(false);
    expect(validNode({ ...good, timestamp: null })).toBe(false);
    expect(validNode({ ...good, extra: 1 })).toBe(false);
    expect(validPod({ ...good, kind: 'PodMetrics', containers: [] })).toBe(false); // no namespace
  });
});

describe('metricsGroups', () => {
  it('declares NodeMetrics and PodMetrics under metrics.annex.dev/v1beta1', async () => {
    const store = filledStore();
    const decl = metricsGroups({ nodes: store.nodes, pods: store.pods });
    expect(decl.group).toBe('metrics.annex.dev');
    expect(decl.versions).toEqual(['v1beta1']);
    expect(
      decl.resources.map((r) => [r.kind, r.plural, r.singular, r.namespaced, r.verbs.join(',')]),
    ).toEqual([
      ['NodeMetrics', 'nodes', 'nodemetrics', false, 'get,list,watch'],
      ['PodMetrics', 'pods', 'podmetrics', true, 'get,list,watch'],
    ]);
    const [node] = (await decl.resources[0]!.provider.snapshot()).items;
    expect(node?.apiVersion).toBe('metrics.annex.dev/v1beta1');
  });

  it('Table columns as metrics-server: Name, cpu, memory, Window', async () => {
    const store = filledStore();
    const decl = metricsGroups({ nodes: store.nodes, pods: store.pods });
    const nodeDecl = decl.resources[0]!;
    expect(nodeDecl.columns.map((c) => [c.name, c.format])).toEqual([
      ['Name', 'name'],
      ['cpu', 'quantity'],
      ['memory', 'quantity'],
      ['Window', 'duration'],
    ]);
    const [node] = (await nodeDecl.provider.snapshot()).items;
    const nodeTable = toTable(
      nodeDecl,
      [node!],
      {},
      { version: 'v1', includeObject: 'Object', apiVersion: 'x/v1' },
    );
    // Cells as `kubectl top`: cpu milli rounded up, memory Mi truncated; the object exact.
    expect(nodeTable.rows[0]?.cells).toEqual(['worker-1', '250m', '2721Mi', '15.013s']);
    expect((node as KubeObject).usage).toEqual({ cpu: '249957861n', memory: '2786616Ki' });
    const podDecl = decl.resources[1]!;
    const [pod] = (await podDecl.provider.snapshot()).items;
    // Pod rows sum the containers (metrics-server's pkg/api/table.go), through toTable.
    const table = toTable(
      podDecl,
      [pod!],
      {},
      { version: 'v1', includeObject: 'None', apiVersion: 'x/v1' },
    );
    expect(table.rows[0]?.cells).toEqual([
      'web-6f9c7d5b8d-k2x7p',
      '44m', // 43468512n
      '57Mi', // 58708Ki
      '15.014s',
    ]);
  });

  it('podUsageTotals sums containers as metrics-server’s pod rows', async () => {
    const [web] = (await filledStore().pods.snapshot()).items;
    // 5616381n + 37852131n; 17836Ki + 40872Ki
    expect(podUsageTotals(web as KubeObject)).toEqual({ cpu: '43468512n', memory: '58708Ki' });
  });

  it('metrics.k8s.io: v1beta1 and v1, empty singular names like metrics-server', async () => {
    const store = filledStore();
    const decl = metricsK8sIoGroup({ nodes: store.nodes, pods: store.pods });
    expect(decl.group).toBe('metrics.k8s.io');
    expect(decl.versions).toEqual(['v1beta1', 'v1']);
    expect(decl.resources.map((r) => r.singular)).toEqual(['', '']);
    const pods = decl.resources[1]!.provider;
    const { resourceVersion, items } = await pods.snapshot();
    expect(items.every((i) => i.apiVersion === 'metrics.k8s.io/v1beta1')).toBe(true);
    const events: WatchEvent[] = [];
    pods.subscribe!(String(Number(resourceVersion) - 1), (e) => events.push(e));
    expect(events).toHaveLength(1);
    expect(events[0]?.object.apiVersion).toBe('metrics.k8s.io/v1beta1');
  });

  it('refuses an empty version list', () => {
    const store = filledStore();
    expect(() => metricsGroups({ nodes: store.nodes, pods: store.pods, versions: [] })).toThrow();
  });
});
