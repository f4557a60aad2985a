// With metrics.registerMetricsK8sIo, annex serves the same data as metrics.k8s.io v1beta1
// and v1, registered from the repo's apiservice/metrics-k8s-io YAML: an unmodified
// `kubectl top` then prints the numbers the test kubelets report.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Config } from '../../src/config/load.js';
import {
  deleteObjects,
  registerApiServices,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import { createNamespace, describeCluster, kubectl, kubectlOk } from '../cluster/harness.js';
import {
  eventually,
  startFakeMetricsCluster,
  type FakeMetricsCluster,
  type FakePod,
} from '../cluster/kubelet.js';

const INTERVAL_S = 2;
const Mi = 1024 * 1024;
const Gi = 1024 * Mi;

describeCluster('kubectl top with annex registered as metrics.k8s.io', () => {
  let annex: TestAnnex;
  let fake: FakeMetricsCluster;
  let apiservices: any[] = [];
  let ns: string;
  const suffix = Math.random().toString(16).slice(2, 6);
  const nodes = [`top-a-${suffix}`, `top-b-${suffix}`];
  const tmp = mkdtempSync(join(tmpdir(), 'annex-top-e2e-'));
  const cache = ['--cache-dir', join(tmp, 'kube-cache')];
  const k = (args: string[]) => kubectl([...cache, ...args]);
  const kOk = (args: string[]) => kubectlOk([...cache, ...args]);
  const rows = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/));

  beforeAll(async () => {
    ns = await createNamespace('top');
    const pod = (name: string, cpu: number, memory: number): FakePod => ({
      namespace: ns,
      name,
      labels: { app: name.split('-')[0]! },
      containers: [
        { name: 'main', cpu, memory },
        { name: 'sidecar', cpu: 0.125, memory: 16 * Mi },
      ],
    });
    fake = await startFakeMetricsCluster(
      [
        {
          name: nodes[0]!,
          usage: { cpu: 0.5, memory: 2 * Gi },
          allocatable: { cpu: '4', memory: '8Gi' },
          pods: [pod('api-0', 0.25, 128 * Mi), pod('api-1', 0.375, 192 * Mi)],
        },
        {
          name: nodes[1]!,
          usage: { cpu: 1.5, memory: 6 * Gi },
          allocatable: { cpu: '2', memory: '8Gi' },
          pods: [pod('worker-0', 1, 512 * Mi)],
        },
      ],
      INTERVAL_S * 1000,
    );
    annex = await startTestAnnex({
      metrics: {
        source: 'kubelet',
        registerMetricsK8sIo: true,
        scrapeIntervalSeconds: INTERVAL_S,
        kubelet: { caFile: fake.caFile, timeoutSeconds: 1.5 } as Config['metrics']['kubelet'],
      },
    });
    apiservices = await registerApiServices('apiservice/metrics-k8s-io/apiservice.yaml', annex);
    await eventually(async () => {
      const list = JSON.parse(await kOk(['get', '--raw', '/apis/metrics.k8s.io/v1/pods']));
      return list.items.filter((p: any) => p.metadata.namespace === ns).length === 3
        ? true
        : undefined;
    });
  });

  afterAll(async () => {
    // Other files must not see metrics.k8s.io pointing at a stopped annex.
    if (apiservices.length) await deleteObjects(apiservices);
    await annex?.stop();
    await fake?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('serves v1 and v1beta1 of metrics.k8s.io from the same data', async () => {
    for (const v of ['v1', 'v1beta1']) {
      const node = JSON.parse(
        await kOk(['get', '--raw', `/apis/metrics.k8s.io/${v}/nodes/${nodes[0]}`]),
      );
      expect(node).toMatchObject({
        kind: 'NodeMetrics',
        apiVersion: `metrics.k8s.io/${v}`,
        metadata: { name: nodes[0] },
        usage: { cpu: '500m', memory: '2Gi' },
        window: '2s',
      });
    }
    const discovery = JSON.parse(await kOk(['get', '--raw', '/apis/metrics.k8s.io']));
    expect(discovery.preferredVersion.version).toBe('v1');
  });

  it('kubectl top node prints usage and percentages of allocatable (through v1)', async () => {
    const r = await k(['top', 'node', '-v=6']);
    expect(r.code, r.stderr).toBe(0);
    const out = rows(r.stdout);
    expect(out[0]).toEqual(['NAME', 'CPU(cores)', 'CPU(%)', 'MEMORY(bytes)', 'MEMORY(%)']);
    expect(out.filter((row) => nodes.includes(row[0]!))).toEqual([
      [nodes[0], '500m', '12%', '2048Mi', '25%'],
      [nodes[1], '1500m', '75%', '6144Mi', '75%'],
    ]);
    expect(r.stderr).toContain('/apis/metrics.k8s.io/v1/nodes');
  });

  it('kubectl top pod -A sums containers; --containers shows each', async () => {
    const all = rows(await kOk(['top', 'pod', '-A']));
    expect(all[0]).toEqual(['NAMESPACE', 'NAME', 'CPU(cores)', 'MEMORY(bytes)']);
    expect(all.filter((row) => row[0] === ns)).toEqual([
      [ns, 'api-0', '375m', '144Mi'],
      [ns, 'api-1', '500m', '208Mi'],
      [ns, 'worker-0', '1125m', '528Mi'],
    ]);
    const containers = rows(
      await kOk(['top', 'pod', '-n', ns, '-l', 'app=worker', '--containers']),
    );
    expect(containers).toEqual([
      ['POD', 'NAME', 'CPU(cores)', 'MEMORY(bytes)'],
      ['worker-0', 'main', '1000m', '512Mi'],
      ['worker-0', 'sidecar', '125m', '16Mi'],
    ]);
  });
});
