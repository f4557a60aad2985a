// The source without a cluster: this machine as one node and the annex process as one pod,
// sampled as cumulative counters and fed through the same store, so the rules and the
// object shapes are exactly those of the kubelet source.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { Logger } from '../log.js';
import { msToNs, type MetricsBatch, type MetricsPoint } from './points.js';

export interface LocalSourceOptions {
  onBatch: (batch: MetricsBatch) => void;
  intervalSeconds?: number;
  /** The pod's namespace; default annex-system (the namespace annex installs into). */
  namespace?: string;
  /** Default `annex-<hostname>`, reduced to a DNS label. */
  podName?: string;
  /** Default os.hostname(). */
  nodeName?: string;
  log?: Logger;
  /** Injectable probes for tests. */
  probes?: Partial<Probes>;
}

export interface Probes {
  now(): number;
  /** Cumulative busy CPU time of the machine, core-seconds. */
  machineCpuSeconds(): number;
  machineWorkingSetBytes(): number;
  /** Cumulative CPU time of this process, core-seconds. */
  processCpuSeconds(): number;
  processRssBytes(): number;
  /** When this process started, ms since the epoch. */
  processStartMs(): number;
}

/** Busy time summed over all CPUs (everything but idle), as the kubelet's usageCoreNanoSeconds. */
function machineCpuSeconds(): number {
  let ms = 0;
  for (const c of os.cpus()) ms += c.times.user + c.times.nice + c.times.sys + c.times.irq;
  return ms / 1000;
}

/** MemTotal − MemAvailable from /proc/meminfo; total − free elsewhere. */
function machineWorkingSetBytes(): number {
  try {
    const info = readFileSync('/proc/meminfo', 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(info)?.[1]);
    const total = kb('MemTotal');
    const available = kb('MemAvailable');
    if (total > 0 && available >= 0) return (total - available) * 1024;
  } catch {
    // not Linux: fall through
  }
  return os.totalmem() - os.freemem();
}

const START_MS = Date.now() - process.uptime() * 1000;

const defaultProbes: Probes = {
  now: Date.now,
  machineCpuSeconds,
  machineWorkingSetBytes,
  processCpuSeconds: () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  },
  processRssBytes: () => process.memoryUsage.rss(),
  processStartMs: () => START_MS,
};

const KUBE_ARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm' };

/** Lower-case DNS label (RFC 1123) of at most 63 characters. */
export function dnsLabel(text: string): string {
  const label = text
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63)
    .replace(/-+$/, '');
  return label || 'local';
}

export class LocalSource {
  readonly intervalMs: number;
  private readonly probes: Probes;
  private readonly nodeName: string;
  private readonly namespace: string;
  private readonly podName: string;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LocalSourceOptions) {
    this.intervalMs = (opts.intervalSeconds ?? 15) * 1000;
    this.probes = { ...defaultProbes, ...opts.probes };
    this.nodeName = opts.nodeName ?? os.hostname();
    this.namespace = opts.namespace ?? 'annex-system';
    this.podName = opts.podName ?? dnsLabel(`annex-${os.hostname()}`);
  }

  /** One sample of the node and the pod. */
  sample(): MetricsBatch {
    const p = this.probes;
    const tsNs = msToNs(p.now());
    const seconds = (s: number) => BigInt(Math.trunc(s * 1e9));
    const node: MetricsPoint = {
      startNs: 0n,
      tsNs,
      cpuNs: seconds(p.machineCpuSeconds()),
      memory: Math.trunc(p.machineWorkingSetBytes()),
    };
    const container: MetricsPoint = {
      startNs: msToNs(p.processStartMs()),
      tsNs,
      cpuNs: seconds(p.processCpuSeconds()),
      memory: Math.trunc(p.processRssBytes()),
    };
    return {
      nodes: [
        {
          name: this.nodeName,
          labels: {
            'kubernetes.io/hostname': this.nodeName,
            'kubernetes.io/os': process.platform,
            'kubernetes.io/arch': KUBE_ARCH[process.arch] ?? process.arch,
          },
          point: node,
        },
      ],
      pods: [
        {
          namespace: this.namespace,
          name: this.podName,
          labels: { 'app.kubernetes.io/name': 'annex' },
          containers: new Map([['annex', container]]),
        },
      ],
    };
  }

  /**
   * Sample now, again after one second, then every interval: the second early sample gives
   * the two points a rate needs, so `npm start` shows numbers within a second.
   */
  start(): void {
    const tick = () => {
      try {
        this.opts.onBatch(this.sample());
      } catch (err) {
        this.opts.log?.error({ err: String(err) }, 'Failed to sample local metrics');
      }
    };
    tick();
    this.timer = setTimeout(
      () => {
        tick();
        this.timer = setInterval(tick, this.intervalMs);
      },
      Math.min(1000, this.intervalMs),
    );
  }

  stop(): void {
    clearTimeout(this.timer);
    clearInterval(this.timer);
  }
}
