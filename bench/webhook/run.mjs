// Webhook scenarios (issue 13 item 2): every server of servers/index.mjs, each its own
// process pinned to core 0, the load generator (load.mjs) pinned to core 1; servers
// alternated inside every round (order rotated per round); keep-alive HTTPS HTTP/1.1.
//   closed loop, 16 connections:  server CPU per review and reviews/s, 5/10/50 KB
//   open loop, 25 connections:    p50/p99/p99.9 from the due time at 1,000 and 5,000/s, 10 KB
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, httpsStatus } from '../net.mjs';
import { makeCerts } from './certs.mjs';
import { rssKiB } from './load.mjs';
import { deploymentReview, reviewSet, SIZES_KB } from '../reviews.mjs';
import { CHECKS, servers as SERVERS } from './servers/index.mjs';

const here = import.meta.dirname;
const PATHS = ['validate', 'mutate'];
const OPEN_KB = 10;

export function plan(quick) {
  return quick
    ? {
        sizes: [OPEN_KB],
        warmupMs: 600,
        closed: { connections: 16, warmupMs: 300, durationMs: 500 },
        rates: [
          { rate: 1000, warmupMs: 200, durationMs: 600 },
          { rate: 5000, warmupMs: 200, durationMs: 400 },
        ],
      }
    : {
        sizes: SIZES_KB,
        warmupMs: 1000,
        closed: {
          connections: 16,
          warmupMs: 200,
          durationMs: 1000,
          minCpuMs: 500,
          maxDurationMs: 2000,
        },
        rates: [
          { rate: 1000, warmupMs: 200, durationMs: 2000 },
          { rate: 5000, warmupMs: 200, durationMs: 1000 },
        ],
      };
}

const pinned = availableParallelism() >= 2;
const onCore = (core, command, args) =>
  pinned ? ['taskset', ['-c', String(core), command, ...args]] : [command, args];

/** POST one review with node:https; resolves to the parsed AdmissionReview response. */
function post(port, ca, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        ca,
        servername: 'localhost',
        agent: false,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${text}`));
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error(`not JSON: ${text.slice(0, 80)}`));
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The answers every server must give before it is measured; throws what is wrong. */
export async function checkAnswers(name, port, ca, paths) {
  const body = deploymentReview({ bytes: 10 * 1024, i: 7 });
  const uid = JSON.parse(body).request.uid;
  const v = (await post(port, ca, paths.validate, body)).response;
  if (v?.uid !== uid || v.allowed !== true) throw new Error(`validate: ${JSON.stringify(v)}`);
  const m = (await post(port, ca, paths.mutate, body)).response;
  if (m?.uid !== uid || m.allowed !== true || m.patchType !== 'JSONPatch' || !m.patch) {
    throw new Error(`mutate: ${JSON.stringify(m)}`);
  }
  if (!CHECKS.exact.includes(name)) return;
  const patch = JSON.stringify(JSON.parse(Buffer.from(m.patch, 'base64').toString()));
  if (!patch.includes('bench.annex.dev~1mutated') || !patch.includes('/containers/0/resources')) {
    throw new Error(`mutate: patch lacks the label or the requests: ${patch}`);
  }
  if (patch.includes('/containers/1/resources')) {
    throw new Error(`mutate: patch overwrites existing requests: ${patch}`);
  }
  const bad = (
    await post(
      port,
      ca,
      paths.validate,
      deploymentReview({ bytes: 5 * 1024, i: 8, name: 'Web.Front' }),
    )
  ).response;
  if (
    bad?.allowed !== false ||
    bad.status?.code !== 422 ||
    !/metadata\.name/.test(bad.status?.message)
  ) {
    throw new Error(`validate (bad name): ${JSON.stringify(bad)}`);
  }
}

async function startServer(name, entry, ctx, certs, work) {
  const port = await freePort();
  const env = {
    BENCH_PORT: String(port),
    BENCH_CERT: certs.cert,
    BENCH_KEY: certs.key,
    BENCH_CA: certs.caFile,
    BENCH_WORK: join(work, name),
  };
  mkdirSync(env.BENCH_WORK, { recursive: true });
  const how = entry.prepare ? await entry.prepare({ ...ctx, certDir: certs.dir }, env) : entry;
  if (how.skip) return { skip: how.skip };
  // Server logs go where a container runtime would take them: a sink that costs a write.
  const devNull = openSync('/dev/null', 'w');
  const [command, args] = onCore(0, how.command, how.args ?? []);
  const child = spawn(command, args, {
    env: { ...process.env, ...how.env, ...env },
    stdio: ['ignore', entry.ready === 'stdout' ? 'pipe' : devNull, devNull],
  });
  const exited = new Promise((r) => child.once('exit', (code) => r(`exited with ${code}`)));
  const t0 = Date.now();
  let ready;
  if (entry.ready === 'stdout') {
    ready = new Promise((resolve) => {
      let out = '';
      child.stdout.on('data', (c) => {
        out += c;
        if (/^ready$/m.test(out)) resolve('ready');
      });
    });
  } else {
    ready = (async () => {
      while (Date.now() - t0 < 60_000 && child.exitCode === null) {
        if ((await httpsStatus(port, entry.ready, certs.ca)) === 200) return 'ready';
        await sleep(20);
      }
      return 'not ready within 60 s';
    })();
  }
  const outcome = await Promise.race([ready, exited, sleep(60_000, 'no `ready` within 60 s')]);
  if (outcome !== 'ready') {
    child.kill('SIGKILL');
    throw new Error(`${name}: ${outcome}`);
  }
  await sleep(300); // let start-up work settle before reading idle memory
  return {
    port,
    pid: child.pid,
    child,
    buildSeconds: how.buildSeconds,
    idleRssKiB: rssKiB(child.pid),
  };
}

function startLoadGenerator() {
  const [command, args] = onCore(1, process.execPath, [join(here, 'load.mjs')]);
  const child = spawn(command, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waitFor = (type) =>
    new Promise((resolve, reject) => {
      const on = (m) => {
        if (m.type === 'error') reject(new Error(m.message));
        else if (m.type === type) resolve(m);
        else return;
        child.off('message', on);
      };
      child.on('message', on);
    });
  const up = waitFor('up');
  return {
    up,
    run: async (job) => {
      const done = waitFor('result');
      child.send({ type: 'run', job });
      const { result } = await done;
      for (const k of Object.keys(result)) if (result[k] === null) result[k] = NaN;
      return result;
    },
    stop: async () => {
      const closed = waitFor('closed');
      child.send({ type: 'close' });
      await Promise.race([closed, sleep(2000)]);
      child.kill();
    },
  };
}

const rotate = (xs, n) => xs.map((_, i) => xs[(i + n) % xs.length]);

export async function run(ctx) {
  const p = plan(ctx.quick);
  const only = process.env.BENCH_SERVERS?.split(',').filter(Boolean);
  const names = Object.keys(SERVERS).filter((n) => !only || only.includes(n));
  const work = mkdtempSync(join(tmpdir(), 'annex-bench-webhook-'));
  const notes = [];
  const rows = [];
  const running = new Map();
  const gen = startLoadGenerator();
  try {
    if (!pinned) notes.push('fewer than 2 cores: server and load generator were not pinned');
    const certs = await makeCerts(join(work, 'certs'));
    await gen.up;
    for (const name of names) {
      const entry = SERVERS[name];
      try {
        const s = await startServer(name, entry, ctx, certs, work);
        if (s.skip) {
          notes.push(`${name} (${entry.label}): ${s.skip}`);
          ctx.log(`  ${name}: skipped (${s.skip})`);
          continue;
        }
        await checkAnswers(name, s.port, certs.ca, entry.paths);
        running.set(name, s);
        if (s.buildSeconds > 5)
          notes.push(`${name}: built from cold in ${s.buildSeconds.toFixed(0)} s`);
        ctx.log(`  ${name}: up (pid ${s.pid}, idle RSS ${(s.idleRssKiB / 1024).toFixed(0)} MB)`);
      } catch (e) {
        notes.push(`${name} (${entry.label}): not measured: ${e.message}`);
        ctx.log(`  ${name}: FAILED: ${e.message}`);
        running.get(name)?.child.kill('SIGKILL');
        running.delete(name);
      }
    }
    const live = [...running.keys()];
    const bodies = Object.fromEntries(p.sizes.map((kb) => [kb, reviewSet(kb)]));
    const job = (name, s, path, b) => ({
      port: s.port,
      ca: certs.caPem,
      // As the API server calls: the path of the registration, with its timeout.
      path: `${SERVERS[name].paths[path]}?timeout=10s`,
      bodies: b,
      pid: s.pid,
    });
    const cells = new Map(); // key -> values per round
    const put = (key, value) => {
      if (!cells.has(key)) cells.set(key, []);
      cells.get(key).push(value);
    };
    const maxRss = new Map();
    // Failed or unanswered reviews per cell, summed over rounds: one note each.
    const failures = new Map();
    const failed = (cell, r) => {
      if (!r.errors) return;
      const f = failures.get(cell) ?? {};
      for (const [k, n] of Object.entries(r.statuses)) f[k] = (f[k] ?? 0) + n;
      failures.set(cell, f);
    };
    // JIT warm-up: each server answers both paths for a while before anything counts.
    for (const name of live) {
      for (const path of PATHS) {
        const s = running.get(name);
        await gen.run({
          ...job(name, s, path, bodies[OPEN_KB] ?? Object.values(bodies)[0]),
          mode: 'closed',
          connections: p.closed.connections,
          warmupMs: 0,
          durationMs: p.warmupMs,
        });
      }
    }
    ctx.log(`  warmed up (${p.warmupMs} ms per server and path)`);
    for (let round = 0; round < ctx.rounds; round++) {
      const order = rotate(live, round);
      ctx.log(`webhook round ${round + 1}/${ctx.rounds}: ${order.join(', ')}`);
      for (const kb of p.sizes) {
        for (const path of PATHS) {
          for (const name of order) {
            const s = running.get(name);
            const r = await gen.run({
              ...job(name, s, path, bodies[kb]),
              mode: 'closed',
              ...p.closed,
            });
            const at = `${path}|${kb}|closed|${name}`;
            put(`${at}|cpu`, r.cpuMicrosPerRequest);
            put(`${at}|rps`, r.throughput);
            put(`${at}|newconn`, r.newConnections);
            put(`${at}|clientcpu`, r.clientCpuPercent);
            put(`${at}|servercpu`, r.serverCpuPercent);
            failed(`${name} ${path} ${kb} KB saturation`, r);
            maxRss.set(name, Math.max(maxRss.get(name) ?? 0, r.rssKiB));
          }
          ctx.log(`  ${path} ${kb} KB saturation done`);
        }
      }
      for (const path of PATHS) {
        for (const { rate, ...timing } of p.rates) {
          for (const name of order) {
            const s = running.get(name);
            const r = await gen.run({
              ...job(name, s, path, bodies[OPEN_KB]),
              mode: 'open',
              rate,
              connections: 25,
              drainMs: 1000,
              ...timing,
            });
            const at = `${path}|${OPEN_KB}|${rate}|${name}`;
            for (const q of ['p50', 'p99', 'p999']) put(`${at}|${q}`, r[q]);
            put(`${at}|cpu`, r.cpuMicrosPerRequest);
            put(`${at}|newconn`, r.newConnections);
            failed(`${name} ${path} ${OPEN_KB} KB at ${rate}/s`, r);
          }
          ctx.log(`  ${path} ${OPEN_KB} KB at ${rate}/s done`);
        }
      }
    }
    for (const name of live) {
      const s = running.get(name);
      rows.push(row('memory', 'RSS idle', name, 'MB', [s.idleRssKiB / 1024]));
      rows.push(
        row('memory', 'RSS under load (peak of the saturation runs)', name, 'MB', [
          maxRss.get(name) / 1024,
        ]),
      );
    }
    for (const [cell, f] of failures) {
      const what = Object.entries(f).map(([k, n]) =>
        k === 'unanswered' ? `${n} still waiting 1 s after the window` : `${n} answered HTTP ${k}`,
      );
      notes.push(`${cell}, over ${ctx.rounds} round(s): ${what.join(', ')}`);
    }
    rows.push(...cellRows(cells));
    return { rows, ratios: ratiosOf(rows), notes, servers: labels(live) };
  } finally {
    await gen.stop();
    for (const s of running.values()) s.child.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  }
}

const labels = (names) => Object.fromEntries(names.map((n) => [n, SERVERS[n].label]));

const row = (group, scenario, subject, unit, values, metric = scenario) => ({
  group,
  scenario,
  subject,
  metric,
  unit,
  values,
});

const METRICS = {
  cpu: ['server CPU per review', 'µs'],
  rps: ['reviews/s at saturation', 'req/s'],
  newconn: ['new TLS connections in the window', 'count'],
  clientcpu: ['load generator CPU', '%'],
  servercpu: ['server core used', '%'],
  p50: ['p50', 'ms'],
  p99: ['p99', 'ms'],
  p999: ['p99.9', 'ms'],
};

/** Scenario names the report and the ratios use: "validate 10 KB saturation", "mutate 10 KB at 1000/s". */
export const scenarioName = (path, kb, mode) =>
  `${path} ${kb} KB ${mode === 'closed' ? 'saturation' : `at ${mode}/s`}`;

function cellRows(cells) {
  const out = [];
  for (const [key, values] of cells) {
    const [path, kb, mode, subject, metric] = key.split('|');
    const [name, unit] = METRICS[metric];
    out.push({
      group: 'webhook',
      scenario: scenarioName(path, kb, mode),
      subject,
      metric: name,
      unit,
      values,
    });
  }
  return out;
}

function find(rows, scenario, subject, metric) {
  return rows.find((r) => r.scenario === scenario && r.subject === subject && r.metric === metric);
}

/** Per-round ratios subject/reference of one metric, when both were measured. */
function ratio(rows, name, scenario, metric, subject, reference, target) {
  const a = find(rows, scenario, subject, metric);
  const b = find(rows, scenario, reference, metric);
  if (!a || !b) return [];
  const values = a.values.map((v, i) => v / b.values[i]);
  return [
    {
      group: 'webhook',
      name: `${name}, ${scenario}`,
      subject,
      reference,
      values,
      ...(target ? { target } : {}),
    },
  ];
}

export function ratiosOf(rows) {
  const out = [];
  const cpu = METRICS.cpu[0];
  const rps = METRICS.rps[0];
  for (const kb of SIZES_KB) {
    for (const path of PATHS) {
      const sc = scenarioName(path, kb, 'closed');
      const bar = path === 'validate' ? 1.2 : 1.5;
      out.push(
        ...ratio(rows, 'CPU per review vs A', sc, cpu, 'annex', 'bare', { op: '<=', value: bar }),
      );
      out.push(
        ...ratio(rows, 'throughput vs B', sc, rps, 'annex', 'controller-runtime', {
          op: '>=',
          value: 2,
        }),
      );
      out.push(...ratio(rows, 'throughput vs B′', sc, rps, 'annex', 'go-hand'));
      out.push(...ratio(rows, 'throughput vs C', sc, rps, 'annex', 'pepr'));
      for (const other of [
        'annex-builtins',
        'annex-policies',
        'controller-runtime',
        'go-hand',
        'pepr',
      ]) {
        out.push(...ratio(rows, 'CPU per review vs A', sc, cpu, other, 'bare'));
      }
      for (const name of ['annex', 'annex-builtins', 'annex-policies']) {
        out.push(...ratio(rows, 'CPU per review vs before', sc, cpu, name, `${name}@before`));
      }
    }
  }
  for (const path of PATHS) {
    const sc = scenarioName(path, OPEN_KB, 1000);
    const p99 = find(rows, sc, 'annex', 'p99');
    if (p99) {
      out.push({
        group: 'webhook',
        name: `p99 vs 1 ms, ${sc}`,
        subject: 'annex',
        reference: '1 ms',
        values: p99.values.map((v) => v / 1),
        target: { op: '<=', value: 1 },
      });
    }
    out.push(...ratio(rows, 'p99 vs before', sc, 'p99', 'annex', 'annex@before'));
  }
  return out;
}
