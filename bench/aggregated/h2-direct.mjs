// Aggregated GETs over HTTP/2 straight to the server, as the aggregator sends them (it
// proxies over h2; test/e2e/protocols.test.ts pins that): server CPU per request for a
// get of one PodMetrics, a namespace's list (10) and the whole list (1,000), annex
// (`annex serve`, standalone, the metrics group over synthetic scrapes: h2-feature.mjs)
// beside a bare node:http2 server (h2-bare.mjs) writing the objects annex answered,
// each encoded once; and, with BENCH_BEFORE=<built checkout>, that tree's annex in the
// same rounds.
// Each server its own process pinned to core 0, the client (this process) on core 1;
// servers rotated per round; one h2 session per server, 16 streams in flight, closed loop.
// No control plane: the scenario `aggregated` measures the path through kube-apiserver.
//
//   npm run build && [BENCH_BEFORE=<built checkout>] node bench/aggregated/h2-direct.mjs [rounds=5]
//   (or BENCH_ONLY=aggregated-h2 npm run bench)
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, httpsStatus } from '../net.mjs';
import { makeCerts } from '../webhook/certs.mjs';
import { cpuMs, h2session, median, send } from './client.mjs';

const here = import.meta.dirname;
const root = join(here, '../..');
const PODS = 1000;
const GROUP = 'aggregated-h2';
const IN_FLIGHT = 16;
const API = '/apis/metrics.annex.dev/v1beta1';
const BARE = 'bare node:http2';

export async function run(ctx) {
  const warmupMs = ctx.quick ? 300 : 500;
  const measureMs = ctx.quick ? 600 : 1500;
  const cores = availableParallelism();
  const pinned = cores >= 2;
  const taskset = (cpus) =>
    execFileSync('taskset', ['-p', '-c', cpus, String(process.pid)], { stdio: 'ignore' });
  if (pinned) taskset('1');
  const work = mkdtempSync(join(tmpdir(), 'annex-h2-bench-'));
  const servers = [];
  try {
    const certs = await makeCerts(join(work, 'certs'));
    const start = async (name, args, env = {}) => {
      const port = await freePort();
      const argv = [process.execPath, ...args(port)];
      const [cmd, rest] = pinned ? ['taskset', ['-c', '0', ...argv]] : [argv[0], argv.slice(1)];
      const child = spawn(cmd, rest, {
        stdio: 'ignore',
        env: {
          ...process.env,
          BENCH_PORT: String(port),
          BENCH_CERT: certs.cert,
          BENCH_KEY: certs.key,
          ...env,
        },
      });
      const s = { name, child, pid: child.pid };
      servers.push(s);
      for (let i = 0; i < 100 && (await httpsStatus(port, '/readyz', certs.ca)) === 0; i++)
        await sleep(100);
      const tls = { ca: certs.ca, servername: 'localhost' };
      s.target = { session: h2session(`https://127.0.0.1:${port}`, tls), headers: {} };
      ctx.log(`  ${name}: up (pid ${child.pid})`);
      return s;
    };
    const annex = (tree) => (port) => {
      const config = join(work, `annex-${port}.yaml`);
      writeFileSync(
        config,
        `server: { host: 127.0.0.1, port: ${port}, shutdownDelaySeconds: 0 }\n` +
          `tls: { dir: ${JSON.stringify(certs.dir)}, generate: false }\n` +
          // The built-in metrics feature off: h2-feature.mjs serves its group.
          'metrics: { enabled: false }\n',
      );
      const load = join(here, 'h2-feature.mjs');
      return [join(tree, 'dist/cli/main.js'), 'serve', '--config', config, '--load', load];
    };
    const dist = (tree) => ({ BENCH_ANNEX_DIST: join(tree, 'dist'), BENCH_PODS: String(PODS) });

    const first = await start('annex', annex(root), dist(root));
    if (process.env.BENCH_BEFORE)
      await start('annex@before', annex(process.env.BENCH_BEFORE), dist(process.env.BENCH_BEFORE));
    const scenarios = {
      'get one PodMetrics, HTTP/2 direct': `${API}/namespaces/ns-0/pods/pod-00000`,
      [`list ${PODS / 100} PodMetrics (a namespace), HTTP/2 direct`]: `${API}/namespaces/ns-0/pods`,
      [`list ${PODS} PodMetrics, HTTP/2 direct`]: `${API}/pods`,
    };
    // The objects annex answers, for the bare server to answer in turn.
    const objects = {};
    for (const path of Object.values(scenarios)) {
      const r = await send(first.target, { path });
      if (r.status !== 200)
        throw new Error(`annex ${path}: ${r.status} ${r.body.toString().slice(0, 200)}`);
      objects[path] = JSON.parse(r.body);
    }
    const sizes = Object.values(objects).map((o) => JSON.stringify(o).length);
    writeFileSync(join(work, 'objects.json'), JSON.stringify(objects));
    await start(BARE, () => [join(here, 'h2-bare.mjs')], {
      BENCH_OBJECTS: join(work, 'objects.json'),
    });

    const us = new Map(); // `${scenario}\0${server}` → µs per request, one per round
    for (const s of servers)
      for (const path of Object.values(scenarios)) await load(s.target, path, warmupMs);
    for (let round = 0; round < ctx.rounds; round++) {
      const order = servers.map((_, i) => servers[(i + round) % servers.length]);
      for (const [scenario, path] of Object.entries(scenarios)) {
        for (const s of order) {
          const c0 = cpuMs(s.pid);
          const n = await load(s.target, path, measureMs);
          const key = `${scenario}\0${s.name}`;
          us.set(key, [...(us.get(key) ?? []), ((cpuMs(s.pid) - c0) * 1000) / n]);
        }
      }
      ctx.log(`  aggregated-h2 round ${round + 1}/${ctx.rounds} done`);
    }

    const rows = [];
    const ratios = [];
    for (const scenario of Object.keys(scenarios)) {
      const of = (name) => us.get(`${scenario}\0${name}`);
      for (const s of servers)
        rows.push({
          group: GROUP,
          scenario,
          subject: s.name,
          metric: 'server CPU',
          unit: 'µs/req',
          values: of(s.name),
        });
      const ratio = (name, subject, reference) =>
        of(subject) &&
        of(reference) &&
        ratios.push({
          group: GROUP,
          name: `${name}, ${scenario}`,
          subject,
          reference,
          values: of(subject).map((v, i) => v / of(reference)[i]),
        });
      ratio('CPU per request vs bare', 'annex', BARE);
      ratio('CPU per request vs bare', 'annex@before', BARE);
      ratio('CPU per request vs before', 'annex', 'annex@before');
    }
    const notes = [
      `${IN_FLIGHT} streams in flight on one session per server, ${measureMs} ms per window; ` +
        `servers ${pinned ? 'on core 0, client on core 1' : 'unpinned (one core)'}; ` +
        `answers of ${sizes.map((b) => `${(b / 1024).toFixed(1)} KiB`).join(', ')}`,
    ];
    return { rows, ratios, notes };
  } finally {
    for (const s of servers) {
      s.target?.session.close();
      s.child.kill('SIGTERM');
    }
    rmSync(work, { recursive: true, force: true });
    if (pinned) taskset(`0-${cores - 1}`);
  }
}

/** Closed loop for ms: IN_FLIGHT streams, a new one as each ends; requests done. */
async function load(target, path, ms) {
  const until = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < until) {
        const r = await send(target, { path });
        if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
        n++;
      }
    }),
  );
  return n;
}

if (process.argv[1] === import.meta.filename) {
  const ctx = { rounds: Number(process.argv[2] ?? 5), quick: false, log: console.error };
  const { rows, ratios, notes } = await run(ctx);
  const spread = (xs) =>
    `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  for (const r of [...rows, ...ratios])
    console.log(
      `${r.scenario ?? r.name} | ${r.subject}${r.reference ? ` / ${r.reference}` : ''} | ${spread(r.values)}`,
    );
  console.log(notes.join('\n'));
}
