// A stand-in for a kubelet's /metrics/resource: a real HTTPS server on 127.0.0.1 with a
// certificate from a test CA, serving Prometheus text shaped like a 1.29+ kubelet's (the
// recorded fixtures in src/metrics/fixtures). Each scrape advances the clock by a fixed
// step and the cumulative CPU counters by rate × step, so the CPU annex computes is exact:
// rates that are multiples of 1/8 core keep every value a binary fraction, and no float
// truncation moves a nanocore. Node and Pod objects in the control plane point at it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createCa, issue, type CertAndKey } from '../../src/certs/index.js';
import { kubectl, kubectlOk, type Identity } from './harness.js';

export interface Usage {
  /** Cores (0.25 = 250m). Keep to multiples of 1/8 for exact rates. */
  cpu: number;
  /** Working set in bytes. */
  memory: number;
}

export interface FakeContainer extends Usage {
  name: string;
}

export interface FakePod {
  namespace: string;
  name: string;
  labels?: Record<string, string>;
  containers: FakeContainer[];
}

/** The CA every test kubelet's serving certificate chains to, written to a file for annex. */
export interface KubeletCa {
  ca: CertAndKey;
  caFile: string;
  remove(): void;
}

export async function kubeletCa(): Promise<KubeletCa> {
  const dir = mkdtempSync(join(tmpdir(), 'annex-kubelet-ca-'));
  const ca = await createCa({ commonName: 'annex-test-kubelet-ca' });
  const caFile = join(dir, 'ca.crt');
  writeFileSync(caFile, ca.certPem);
  return { ca, caFile, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const NS_PER_S = 1_000_000_000n;

/** Seconds with nine decimals from whole nanoseconds: "1000.250000000". */
function seconds(ns: bigint): string {
  return `${ns / NS_PER_S}.${(ns % NS_PER_S).toString().padStart(9, '0')}`;
}

const nanocores = (cores: number) => BigInt(Math.round(cores * 1e9));

/**
 * How a test kubelet answers: `ok` as a kubelet; `hang` accepts the request and never
 * answers; `garbage` answers 200 with text that is not the Prometheus format, carrying
 * GARBAGE_CANARY (which must never reach a log).
 */
export type KubeletMode = 'ok' | 'hang' | 'garbage';

export const GARBAGE_CANARY = 'kubelet-garbage-canary-7f3a';

export class TestKubelet {
  /** Scrapes answered so far. */
  scrapes = 0;
  /** Requests for /metrics/resource received, whatever the mode. */
  requests = 0;
  mode: KubeletMode = 'ok';
  private node: Usage;
  private pods: FakePod[];
  private nodeCpuNs = 1_000n * NS_PER_S;
  private containerCpuNs = new Map<string, bigint>();
  private readonly t0Ms = Date.now();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly stepMs: number,
    node: Usage,
    pods: FakePod[],
  ) {
    this.node = node;
    this.pods = pods;
  }

  /** Starts serving on 127.0.0.1:<free port>. `stepMs` is the clock step per scrape. */
  static async start(opts: {
    ca: CertAndKey;
    node: Usage;
    pods?: FakePod[];
    stepMs: number;
  }): Promise<TestKubelet> {
    const leaf = await issue({
      ca: opts.ca,
      commonName: '127.0.0.1',
      usages: ['serverAuth'],
      ipAddresses: ['127.0.0.1'],
      validityDays: 1,
    });
    const holder: { kubelet?: TestKubelet } = {};
    const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (req, res) => {
      if (req.method !== 'GET' || req.url !== '/metrics/resource' || !holder.kubelet) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('404 page not found\n');
        return;
      }
      holder.kubelet.requests++;
      if (holder.kubelet.mode === 'hang') return; // close() drops the connection
      if (holder.kubelet.mode === 'garbage') {
        res
          .writeHead(200, { 'content-type': 'text/plain; version=0.0.4' })
          .end(`node_cpu_usage_seconds_total ${GARBAGE_CANARY}\n{{{ not metrics\n`);
        return;
      }
      res
        .writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' })
        .end(holder.kubelet.scrape());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = server.address() as { port: number };
    holder.kubelet = new TestKubelet(server, port, opts.stepMs, opts.node, opts.pods ?? []);
    return holder.kubelet;
  }

  /** New usage for the next scrapes; counters keep accumulating (no restart). */
  setNode(usage: Usage): void {
    this.node = usage;
  }

  setPods(pods: FakePod[]): void {
    this.pods = pods;
  }

  /** One /metrics/resource body; each call is the next sample. */
  scrape(): string {
    this.scrapes++;
    // The first sample is stamped "now"; later ones one step apart, as a kubelet that is scraped on time.
    const tsMs = this.t0Ms + (this.scrapes - 1) * this.stepMs;
    const stepNs = BigInt(this.stepMs) * 1_000_000n;
    this.nodeCpuNs += (nanocores(this.node.cpu) * stepNs) / NS_PER_S;
    // Containers started an hour before the kubelet: never "fresh", never restarted.
    const startS = Math.floor(this.t0Ms / 1000) - 3600;
    const cpu: string[] = [];
    const mem: string[] = [];
    const start: string[] = [];
    for (const pod of this.pods) {
      for (const c of pod.containers) {
        const key = `${pod.namespace}/${pod.name}/${c.name}`;
        const total =
          (this.containerCpuNs.get(key) ?? 10n * NS_PER_S) + (nanocores(c.cpu) * stepNs) / NS_PER_S;
        this.containerCpuNs.set(key, total);
        const labels = `container="${c.name}",namespace="${pod.namespace}",pod="${pod.name}"`;
        cpu.push(`container_cpu_usage_seconds_total{${labels}} ${seconds(total)} ${tsMs}`);
        mem.push(`container_memory_working_set_bytes{${labels}} ${c.memory} ${tsMs}`);
        start.push(`container_start_time_seconds{${labels}} ${startS}`);
      }
    }
    return [
      '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds',
      '# TYPE container_cpu_usage_seconds_total counter',
      ...cpu,
      '# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes',
      '# TYPE container_memory_working_set_bytes gauge',
      ...mem,
      '# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds',
      '# TYPE container_start_time_seconds gauge',
      ...start,
      '# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds',
      '# TYPE node_cpu_usage_seconds_total counter',
      `node_cpu_usage_seconds_total ${seconds(this.nodeCpuNs)} ${tsMs}`,
      '# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes',
      '# TYPE node_memory_working_set_bytes gauge',
      `node_memory_working_set_bytes ${this.node.memory} ${tsMs}`,
      '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
      '# TYPE resource_scrape_error gauge',
      'resource_scrape_error 0',
      '',
    ].join('\n');
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

/**
 * A Node whose status publishes the test kubelet (InternalIP 127.0.0.1 and its port), with
 * allocatable resources so `kubectl top node` can print percentages.
 */
export async function createNode(
  name: string,
  kubeletPort: number,
  allocatable: { cpu: string; memory: string },
  as?: Identity,
): Promise<void> {
  await kubectlOk(['apply', '-f', '-'], {
    ...(as ? { as } : {}),
    input: JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name } }),
  });
  const status = {
    addresses: [
      { type: 'InternalIP', address: '127.0.0.1' },
      { type: 'Hostname', address: name },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
    capacity: { ...allocatable, pods: '110' },
    allocatable: { ...allocatable, pods: '110' },
  };
  await kubectlOk(
    [
      'patch',
      'node',
      name,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status }),
    ],
    as ? { as } : {},
  );
}

/** A Pod bound to `node` with the fake pod's containers, its status patched to Running. */
export async function createRunningPod(pod: FakePod, node: string, as?: Identity): Promise<void> {
  await kubectlOk(['apply', '-f', '-'], {
    ...(as ? { as } : {}),
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod.name, namespace: pod.namespace, labels: pod.labels ?? {} },
      spec: {
        nodeName: node,
        containers: pod.containers.map((c) => ({
          name: c.name,
          image: 'registry.k8s.io/pause:3.10',
        })),
      },
    }),
  });
  await kubectlOk(
    [
      'patch',
      'pod',
      pod.name,
      '-n',
      pod.namespace,
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status: { phase: 'Running' } }),
    ],
    as ? { as } : {},
  );
}

export interface FakeNode {
  name: string;
  usage: Usage;
  allocatable: { cpu: string; memory: string };
  pods: FakePod[];
}

/** Test kubelets, the Nodes that publish them and their Running Pods, and their removal. */
export interface FakeMetricsCluster {
  caFile: string;
  kubelets: Map<string, TestKubelet>;
  stop(): Promise<void>;
}

/** Namespaces of the pods must exist (createNamespace). `stepMs` = annex's scrape interval. */
export async function startFakeMetricsCluster(
  nodes: FakeNode[],
  stepMs: number,
  /** Who creates the Node and Pod objects (default: the shared control plane's admin). */
  as?: Identity,
): Promise<FakeMetricsCluster> {
  const opt = as ? { as } : {};
  const ca = await kubeletCa();
  const kubelets = new Map<string, TestKubelet>();
  const stop = async () => {
    for (const kl of kubelets.values()) await kl.close();
    for (const n of nodes) {
      await kubectl(['delete', 'node', n.name, '--ignore-not-found', '--wait=false'], opt);
      for (const p of n.pods) {
        await kubectl(
          [
            'delete',
            'pod',
            p.name,
            '-n',
            p.namespace,
            '--ignore-not-found',
            '--grace-period=0',
            '--force',
          ],
          opt,
        );
      }
    }
    ca.remove();
  };
  try {
    for (const n of nodes) {
      const kl = await TestKubelet.start({ ca: ca.ca, node: n.usage, pods: n.pods, stepMs });
      kubelets.set(n.name, kl);
      await createNode(n.name, kl.port, n.allocatable, as);
      for (const p of n.pods) await createRunningPod(p, n.name, as);
    }
  } catch (e) {
    await stop();
    throw e;
  }
  return { caFile: ca.caFile, kubelets, stop };
}

/** Polls `f` until it returns a value (not undefined), for at most `timeoutMs`. */
export async function eventually<T>(
  f: () => Promise<T | undefined>,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await f();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out; last error: ${String(last)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
