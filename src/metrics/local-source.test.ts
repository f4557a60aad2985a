import os from 'node:os';
import { describe, it, expect } from 'vitest';
import { parseNanocores, parseBytes } from '../apiserver/quantity.js';
import { dnsLabel, LocalSource } from './local-source.js';
import type { MetricsBatch } from './points.js';
import { MetricsStore } from './storage.js';

describe('LocalSource', () => {
  it('samples real, positive counters of this machine and process', () => {
    const s = new LocalSource({ onBatch: () => {} });
    const b = s.sample();
    expect(b.nodes[0]?.name).toBe(os.hostname());
    expect(b.nodes[0]?.point.cpuNs).toBeGreaterThan(0n);
    expect(b.nodes[0]?.point.memory).toBeGreaterThan(0);
    expect(b.nodes[0]?.point.memory).toBeLessThanOrEqual(os.totalmem());
    const pod = b.pods[0];
    expect(pod).toMatchObject({
      namespace: 'annex-system',
      name: dnsLabel(`annex-${os.hostname()}`),
    });
    const c = pod?.containers.get('annex');
    expect(c?.memory).toBeGreaterThan(1024 * 1024);
    expect(c?.startNs).toBeLessThan(c?.tsNs ?? 0n);
  });

  it('feeds the store so that node and pod appear after two samples with exact rates', async () => {
    let t = 1_700_000_000_000;
    let machineCpu = 100;
    let procCpu = 2;
    const store = new MetricsStore({ resolutionMs: 15_000 });
    const s = new LocalSource({
      onBatch: (b: MetricsBatch) => store.store(b),
      nodeName: 'laptop',
      podName: 'annex-laptop',
      probes: {
        now: () => t,
        machineCpuSeconds: () => machineCpu,
        machineWorkingSetBytes: () => 3 * 2 ** 30,
        processCpuSeconds: () => procCpu,
        processRssBytes: () => 50 * 2 ** 20,
        processStartMs: () => t - 60_000,
      },
    });
    store.store(s.sample());
    t += 15_000;
    machineCpu += 7.5; // half a core over 15 s
    procCpu += 0.15; // 10 millicores
    store.store(s.sample());
    const [node] = (await store.nodes.snapshot()).items;
    expect(node).toMatchObject({
      metadata: { name: 'laptop', labels: { 'kubernetes.io/hostname': 'laptop' } },
      window: '15s',
      usage: { cpu: '500m', memory: '3Gi' },
    });
    const [pod] = (await store.pods.snapshot()).items;
    expect(pod).toMatchObject({
      metadata: { name: 'annex-laptop', namespace: 'annex-system' },
      containers: [{ name: 'annex', usage: { memory: '50Mi' } }],
    });
    const cpu = (pod as unknown as { containers: { usage: { cpu: string } }[] }).containers[0]
      ?.usage.cpu;
    expect(Number(parseNanocores(cpu ?? '0'))).toBeCloseTo(10_000_000, -2);
  });

  it('start() gives two samples within about a second, then stops', async () => {
    const batches: MetricsBatch[] = [];
    const s = new LocalSource({ onBatch: (b) => batches.push(b), intervalSeconds: 60 });
    s.start();
    await new Promise((r) => setTimeout(r, 1200));
    s.stop();
    expect(batches).toHaveLength(2);
    const store = new MetricsStore({ resolutionMs: 60_000 });
    for (const b of batches) store.store(b);
    const [node] = (await store.nodes.snapshot()).items as unknown as {
      usage: { memory: string };
    }[];
    expect(parseBytes(node?.usage.memory ?? '0')).toBeGreaterThan(0n);
    expect((await store.pods.snapshot()).items).toHaveLength(1);
  });

  it('dnsLabel', () => {
    expect(dnsLabel('annex-My.Host_Name')).toBe('annex-my-host-name');
    expect(dnsLabel('---')).toBe('local');
    expect(dnsLabel('a'.repeat(70) + '-b').length).toBe(63);
  });
});
