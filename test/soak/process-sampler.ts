// Samples a process's resident memory and open file descriptors from /proc at a fixed
// interval, and fits the memory trend: what "RSS flat, no descriptor growth" is judged on.
import { readdirSync, readFileSync } from 'node:fs';

export interface Sample {
  /** Seconds since sampling began. */
  t: number;
  rssMb: number;
  fds: number;
  /** V8 heap in use (MB), when a heap probe is given and answered. */
  heapMb?: number;
}

/** VmRSS (MB) and the number of entries in /proc/PID/fd; null once the process is gone. */
export function sampleOnce(pid: number): { rssMb: number; fds: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
    return { rssMb: kb / 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
  } catch {
    return null;
  }
}

export class ProcessSampler {
  readonly samples: Sample[] = [];
  private readonly t0 = Date.now();
  private readonly timer: NodeJS.Timeout;

  constructor(pid: number, intervalMs: number, heapMb?: () => Promise<number>) {
    const take = () => {
      const s = sampleOnce(pid);
      if (!s) return;
      const sample: Sample = { t: (Date.now() - this.t0) / 1000, ...s };
      this.samples.push(sample);
      void heapMb?.().then(
        (mb) => (sample.heapMb = mb),
        () => {},
      );
    };
    take();
    this.timer = setInterval(take, intervalMs);
  }

  stop(): Sample[] {
    clearInterval(this.timer);
    return this.samples;
  }
}

/** Least-squares slope of y over x (units of y per unit of x); 0 for fewer than 2 points. */
export function slope(points: readonly [number, number][]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** What the samples after warm-up say: RSS trend (MB/min) and range, descriptor range. */
export function summarize(samples: readonly Sample[], warmupSeconds: number) {
  const after = samples.filter((s) => s.t >= warmupSeconds);
  const rss = after.map((s) => s.rssMb);
  const fds = after.map((s) => s.fds);
  const heap = after.filter((s) => s.heapMb !== undefined);
  return {
    samples: after.length,
    rssSlopeMbPerMin: slope(after.map((s) => [s.t / 60, s.rssMb])),
    heapSlopeMbPerMin: slope(heap.map((s) => [s.t / 60, s.heapMb!])),
    heapSamples: heap.length,
    rssMb: {
      first: rss[0] ?? 0,
      min: Math.min(...rss),
      max: Math.max(...rss),
      last: rss.at(-1) ?? 0,
    },
    fds: {
      first: fds[0] ?? 0,
      min: Math.min(...fds),
      max: Math.max(...fds),
      last: fds.at(-1) ?? 0,
    },
  };
}
