// `annex serve` as its own process (the built CLI, dist/cli/main.js), against the test
// control plane: what the soak and the shutdown-under-load tests load, sample and signal.
// Instances started with the same certsDir share one CA (the first generates it).
import { spawn, type ChildProcess } from 'node:child_process';
import { createReadStream, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { request } from 'node:https';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { ClusterInfo } from '../cluster/control-plane.js';
import { freePort } from '../cluster/control-plane.js';

const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

export interface AnnexProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  certsDir: string;
  ca: string;
  caBundle: string;
  logFile: string;
  /** When it was spawned (ms since the epoch): --trace-gc times count from about then. */
  spawnedAt: number;
  /** Exit code (or -1 on a signal) and when it came. */
  exited: Promise<{ code: number; at: number }>;
  readyz(): Promise<number>;
}

export async function startAnnexProcess(
  c: ClusterInfo,
  dir: string,
  name: string,
  o: {
    certsDir: string;
    server?: Record<string, unknown>;
    metricsIntervalSeconds?: number;
    /** Run node with --trace-gc: the heap after each full GC goes to the log (see majorGcHeap). */
    traceGc?: boolean;
  },
): Promise<AnnexProcess> {
  const port = await freePort();
  const config = join(dir, `${name}.yaml`);
  writeFileSync(
    config,
    stringify({
      server: { host: '127.0.0.1', port, ...o.server },
      tls: { dir: o.certsDir, service: 'annex', namespace: 'annex-system' },
      kube: { kubeconfig: c.adminKubeconfig },
      metrics: { source: 'local', scrapeIntervalSeconds: o.metricsIntervalSeconds ?? 1 },
      log: { level: 'info' },
    }),
  );
  const logFile = join(dir, `${name}.log`);
  const out = openSync(logFile, 'a');
  const spawnedAt = Date.now();
  const node = o.traceGc ? ['--trace-gc'] : [];
  const child = spawn(process.execPath, [...node, cli, 'serve', '--config', config], {
    stdio: ['ignore', out, out],
    env: { ...process.env, KUBECONFIG: '' },
  });
  const exited = new Promise<{ code: number; at: number }>((r) =>
    child.once('exit', (code) => r({ code: code ?? -1, at: Date.now() })),
  );
  const deadline = Date.now() + 60_000;
  let ca = '';
  const readyz = () =>
    new Promise<number>((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/readyz', ca, servername: 'localhost', agent: false },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      // A hang guard only: a TLS handshake takes seconds on a loaded machine.
      req.setTimeout(10_000, () => req.destroy());
      req.on('error', () => resolve(0));
      req.end();
    });
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`annex ${name} exited: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`annex ${name} not ready in 60 s: ${readFileSync(logFile, 'utf8')}`);
    }
    try {
      ca ||= readFileSync(join(o.certsDir, 'ca.crt'), 'utf8');
      if ((await readyz()) === 200) break;
    } catch {
      // no certificate yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    child,
    pid: child.pid!,
    port,
    certsDir: o.certsDir,
    ca,
    caBundle: Buffer.from(ca).toString('base64'),
    logFile,
    spawnedAt,
    exited,
    readyz,
  };
}

/** Log lines at warn or above (pino levels ≥ 40), for the report; read as a stream (the soak's log is large). */
export async function warnings(logFile: string): Promise<string[]> {
  const found: string[] = [];
  const lines = createInterface({ input: createReadStream(logFile), crlfDelay: Infinity });
  for await (const l of lines) if (/^\{"level":[4-6]\d,/.test(l)) found.push(l.slice(0, 400));
  return found;
}

/**
 * The heap left after each full (mark-compact) GC, from --trace-gc lines in the log:
 * what a leak grows, without the sawtooth of heap-in-use. `t` is seconds since start.
 */
export async function majorGcHeap(logFile: string): Promise<{ t: number; mb: number }[]> {
  const found: { t: number; mb: number }[] = [];
  const re = /\s(\d+) ms: Mark-Compact(?: \(reduce\))? [\d.]+ \([\d.]+\) -> ([\d.]+) \(/;
  const lines = createInterface({ input: createReadStream(logFile), crlfDelay: Infinity });
  for await (const l of lines) {
    const m = re.exec(l);
    if (m) found.push({ t: Number(m[1]) / 1000, mb: Number(m[2]) });
  }
  return found;
}
