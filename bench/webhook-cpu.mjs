// Webhook request path, annex against a bare node:https server doing the same two rules
// (bench/webhook-cpu-server.mjs): server CPU per review from /proc/PID/stat, the server
// pinned to core 0 and this load generator to core 1, subjects alternated in every round;
// then p50/p99 at a fixed 1,000 req/s (open loop, from the scheduled send time).
// Usage: npm run build && node bench/webhook-cpu.mjs [rounds] [sizes KB, e.g. 5,10,50]
// BENCH_PROF=dir: run annex under --cpu-prof (profiles written to dir on exit).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { ensureCertificates } from '../dist/certs/index.js';

const here = import.meta.dirname;
const ROUNDS = Number(process.argv[2] ?? 3);
const SIZES_KB = (process.argv[3] ?? '5,10,50').split(',').map(Number);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 6000);
const CONNECTIONS = 16;
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 3);
// BENCH_ANNEX=/tmp/dist-before,/tmp/dist-after: annex builds to compare in the same run
// (each a copy of dist/ from which node_modules resolves); default this tree's dist/.
const BUILDS = (process.env.BENCH_ANNEX ?? join(here, '..', 'dist')).split(',');
const label = (dir) => (BUILDS.length > 1 ? `${basename(dir)}:` : '');
// BENCH_CELLS=validate,names: only these (bare references are kept for the ratios).
const only = process.env.BENCH_CELLS?.split(',');
const ANNEX_CELLS = [
  ['validate', '/validate/bench', 'validate'],
  ['names', '/validate/names', 'validate'],
  ['mutate', '/mutate/bench', 'mutate'],
  ['defaults', '/mutate/defaults', 'mutate'],
].filter(([name]) => !only || only.includes(name));
/** [server, name, path, bare name]: the bare references, then every build's webhooks. */
const CELLS = [
  ['bare', 'bare-validate', '/validate', 'bare-validate'],
  ['bare', 'bare-mutate', '/mutate', 'bare-mutate'],
  ...BUILDS.flatMap((dir) =>
    ANNEX_CELLS.map(([name, path, ref]) => [dir, `${label(dir)}${name}`, path, `bare-${ref}`]),
  ),
];
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString());

/** An AdmissionReview of an apps/v1 Deployment CREATE, padded with env vars to `bytes`. */
function review(bytes, i) {
  const container = { name: 'web', image: 'nginx:1.27', env: [] };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: `web-${i}`, namespace: 'bench', labels: { app: 'web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [container], serviceAccountName: 'default' },
      },
    },
  };
  const text = () =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
        kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
        resource: { group: 'apps', version: 'v1', resource: 'deployments' },
        namespace: 'bench',
        operation: 'CREATE',
        userInfo: { username: 'bench' },
        object: deployment,
        oldObject: null,
        dryRun: false,
      },
    });
  for (let n = 0; text().length < bytes; n++) {
    container.env.push({ name: `VAR_${n}`, value: `value-${n}-${'x'.repeat(40)}` });
  }
  return text();
}

async function startServer(kind, certs, dist = '') {
  const prof =
    process.env.BENCH_PROF && kind !== 'bare'
      ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`]
      : [];
  const child = spawn(
    'taskset',
    [
      '-c',
      '0',
      process.execPath,
      ...prof,
      join(here, 'webhook-cpu-server.mjs'),
      kind === 'bare' ? 'bare' : 'annex',
      certs,
      dist,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stderr.resume(); // annex's log lines: read and dropped, as a container runtime would
  const port = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(Number(String(d).trim())));
    child.once('exit', (code) => reject(new Error(`${kind} exited ${code}`)));
  });
  const cpuMicros = () => {
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1e6; // utime + stime
  };
  return {
    port,
    cpuMicros,
    stop: () =>
      new Promise((r) => {
        child.once('exit', r);
        child.kill('SIGINT');
      }),
  };
}

function post(agent, ca, port, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        ca,
        servername: 'localhost',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`${path}: HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) =>
  xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

/** Server CPU µs per review over REQUESTS reviews, CONNECTIONS at a time (closed loop). */
async function cpuPerReview(server, ca, path, bodies) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  for (let i = 0; i < 1000; i++)
    await post(agent, ca, server.port, path, bodies[i % bodies.length]);
  const cpu0 = server.cpuMicros();
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        await post(agent, ca, server.port, path, bodies[i % bodies.length]);
      }
    }),
  );
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = server.cpuMicros() - cpu0;
  agent.destroy();
  return { us: cpu / REQUESTS, rps: REQUESTS / s };
}

/**
 * p50/p99 in ms at RATE req/s for RATE_SECONDS, each from its scheduled send time, and
 * the server CPU per review at that rate (the same arrivals for every subject, so this
 * CPU figure does not depend on how fast each subject could go).
 */
async function latencyAtRate(server, ca, path, bodies) {
  const agent = new Agent({ keepAlive: true, maxSockets: 25 });
  for (let i = 0; i < 300; i++) await post(agent, ca, server.port, path, bodies[i % bodies.length]);
  const total = RATE * RATE_SECONDS;
  const cpu0 = server.cpuMicros();
  const lat = [];
  const pending = [];
  const start = process.hrtime.bigint();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(
      total,
      Math.floor((Number(process.hrtime.bigint() - start) / 1e9) * RATE) + 1,
    );
    for (; sent < due; sent++) {
      const scheduled = start + BigInt(Math.round((sent / RATE) * 1e9));
      pending.push(
        post(agent, ca, server.port, path, bodies[sent % bodies.length]).then(() =>
          lat.push(Number(process.hrtime.bigint() - scheduled) / 1e6),
        ),
      );
    }
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(pending);
  const us = (server.cpuMicros() - cpu0) / total;
  agent.destroy();
  return { p50: pct(lat, 50), p99: pct(lat, 99), us };
}

execFileSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });
const dir = mkdtempSync(join(tmpdir(), 'annex-webhook-cpu-'));
try {
  await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  const ca = readFileSync(join(dir, 'ca.crt'));
  const servers = { bare: await startServer('bare', dir) };
  for (const b of BUILDS) servers[b] = await startServer('annex', dir, b);
  const results = new Map(); // `${kb} ${name}` → { us: [], rps: [], p50: [], p99: [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (const kb of SIZES_KB) {
      const bodies = Array.from({ length: 16 }, (_, i) => review(kb * 1024, i));
      // Alternate the order each round so neither subject always runs first.
      const cells = round % 2 ? CELLS.slice().reverse() : CELLS;
      for (const [server, name, path] of cells) {
        const r = await cpuPerReview(servers[server], ca, path, bodies);
        const key = `${kb} ${name}`;
        const acc = results.get(key) ?? { us: [], rps: [], p50: [], p99: [], rateUs: [] };
        acc.us.push(r.us);
        acc.rps.push(r.rps);
        if (!process.env.BENCH_NO_RATE) {
          const l = await latencyAtRate(servers[server], ca, path, bodies);
          acc.p50.push(l.p50);
          acc.p99.push(l.p99);
          acc.rateUs.push(l.us);
        }
        results.set(key, acc);
      }
      process.stderr.write('.');
    }
  }
  process.stderr.write('\n');
  await Promise.all(Object.values(servers).map((s) => s.stop()));
  const f = (x, d = 1) => (x === undefined ? '-' : x.toFixed(d));
  console.log(
    `server CPU µs/review closed loop (median of ${ROUNDS} rounds, ${REQUESTS} reviews, ${CONNECTIONS} connections), ratio to bare per round: median [min–max]; open loop at ${RATE}/s: p50/p99 ms, CPU µs/review and ratio`,
  );
  for (const kb of SIZES_KB) {
    for (const [, name, , refName] of CELLS) {
      const key = `${kb} ${name}`;
      const r = results.get(key);
      const ref = results.get(`${kb} ${refName}`);
      const ratios = r.us.map((u, i) => u / ref.us[i]);
      const rateRatios = r.rateUs.map((u, i) => u / ref.rateUs[i]);
      const at = rateRatios.length
        ? `  at ${RATE}/s ${f(median(r.rateUs))} µs ${f(median(rateRatios), 2)}x [${f(Math.min(...rateRatios), 2)}–${f(Math.max(...rateRatios), 2)}]`
        : '';
      console.log(
        `${kb} KB ${name.padEnd(20)} ${f(median(r.us)).padStart(7)} µs  ${f(median(ratios), 2)}x [${f(Math.min(...ratios), 2)}–${f(Math.max(...ratios), 2)}]  ${f(median(r.rps), 0)} req/s  p50/p99 ${f(r.p50.length ? median(r.p50) : undefined, 2)}/${f(r.p99.length ? median(r.p99) : undefined, 2)} ms${at}`,
      );
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
