// `npm run bench`: every scenario module in turn (bench/BENCH contract: `run(ctx)` returns
// rows and ratios), then the results JSON and the report (docs/bench/README.md + SVGs).
//   BENCH_QUICK=1      a short smoke run (1 round, short windows; report under bench/results/quick/)
//   BENCH_ROUNDS=N     rounds (default 3)
//   BENCH_ONLY=a,b     only these scenarios (webhook, startup, aggregated, aggregated-h2)
//   BENCH_SERVERS=a,b  only these webhook servers (bench/webhook/servers/index.mjs)
//   BENCH_BEFORE=DIR   also the annex servers of another built checkout, "<name>@before"
//   BENCH_OUT=DIR      where the report goes (default docs/bench, or bench/results/quick)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, homedir, loadavg, release, totalmem, type } from 'node:os';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { passes, summarize, writeReport } from './report.mjs';

const here = import.meta.dirname;
const root = join(here, '..');

export const SCENARIOS = [
  { name: 'webhook', module: 'webhook/run.mjs' },
  { name: 'startup', module: 'startup/run.mjs' },
  // Written by the aggregated-API helper; skipped with a note where it is absent.
  { name: 'aggregated', module: 'aggregated/run.mjs' },
  // Aggregated gets and lists over HTTP/2 straight to annex, beside bare node:http2.
  { name: 'aggregated-h2', module: 'aggregated/h2-direct.mjs' },
];

const git = (...args) => {
  try {
    return execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
};

const tryRun = (cmd, args) => {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return undefined;
  }
};

function versions() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const kube = existsSync(join(root, 'devcluster/versions.env'))
    ? readFileSync(join(root, 'devcluster/versions.env'), 'utf8')
        .split('\n')
        .filter((l) => /^[A-Z_]+=/.test(l))
        .join(', ')
    : undefined;
  const go = tryRun('go', ['version']);
  return {
    annex: pkg.version,
    node: process.version,
    v8: process.versions.v8,
    openssl: process.versions.openssl,
    ...(go ? { go } : {}),
    ...(kube ? { 'control plane (aggregated)': kube } : {}),
  };
}

function machine() {
  const c = cpus();
  return {
    cpus: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryGiB: totalmem() / 2 ** 30,
    os: `${type()} ${release()}`,
    loadavg: loadavg(),
  };
}

export async function runAll(env = process.env) {
  const quick = env.BENCH_QUICK === '1';
  const rounds = Number(env.BENCH_ROUNDS ?? (quick ? 1 : 3));
  const only = env.BENCH_ONLY?.split(',').filter(Boolean);
  const cacheDir = join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'annex/bench');
  const t0 = Date.now();
  const stamp = () => `[${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s]`;
  const log = (msg) => console.log(`${stamp()} ${msg}`);
  const results = {
    version: 1,
    date: new Date().toISOString(),
    commit: git('rev-parse', '--short', 'HEAD') || 'unknown',
    dirty: git('status', '--porcelain', '--untracked-files=no') !== '',
    quick,
    rounds,
    machine: machine(),
    versions: versions(),
    scenarios: [],
    servers: {},
    rows: [],
    ratios: [],
  };
  log(`bench: ${quick ? 'quick, ' : ''}${rounds} round(s), commit ${results.commit}`);
  for (const s of SCENARIOS) {
    if (only && !only.includes(s.name)) continue;
    const file = join(here, s.module);
    const entry = { name: s.name, module: `bench/${s.module}`, notes: [] };
    results.scenarios.push(entry);
    if (!existsSync(file)) {
      entry.skipped = `bench/${s.module} is not on this branch`;
      log(`${s.name}: skipped (${entry.skipped})`);
      continue;
    }
    log(`${s.name}: start`);
    const ts = Date.now();
    try {
      const mod = await import(pathToFileURL(file).href);
      const out = await mod.run({ log, rounds, quick, cacheDir });
      results.rows.push(...out.rows);
      results.ratios.push(...out.ratios);
      entry.notes.push(...(out.notes ?? []));
      Object.assign(results.servers, out.servers ?? {});
    } catch (e) {
      entry.notes.push(`failed: ${e.stack ?? e.message}`);
      log(`${s.name}: FAILED: ${e.message}`);
    }
    entry.seconds = (Date.now() - ts) / 1000;
    log(`${s.name}: done in ${entry.seconds.toFixed(0)} s`);
  }
  // Scenario or server sources present here but not committed: the commit alone does not say what ran.
  const untracked = git('ls-files', '--others', '--exclude-standard', 'bench')
    .split('\n')
    .filter(Boolean);
  if (untracked.length) results.uncommitted = untracked;
  results.machine.loadavgEnd = loadavg();
  for (const r of [...results.rows, ...results.ratios]) Object.assign(r, summarize(r.values));
  for (const r of results.ratios) if (r.target) r.pass = passes(r.median, r.target);
  results.durationSeconds = (Date.now() - t0) / 1000;
  return results;
}

export function save(results, env = process.env) {
  const resultsDir = join(root, 'bench/results');
  mkdirSync(resultsDir, { recursive: true });
  const name = `${results.date.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z')}-${results.commit}.json`;
  const json = `${JSON.stringify(results, null, 1)}\n`;
  writeFileSync(join(resultsDir, name), json);
  const out = env.BENCH_OUT || join(root, results.quick ? 'bench/results/quick' : 'docs/bench');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'results.json'), json);
  return [join(resultsDir, name), join(out, 'results.json'), ...writeReport(results, out)];
}

if (process.argv[1] === import.meta.filename) {
  const results = await runAll();
  const files = save(results);
  console.log('\ntargets:');
  for (const r of results.ratios.filter((x) => x.target)) {
    console.log(
      `  ${r.pass ? 'pass' : 'FAIL'}  ${r.name}: ${r.subject}/${r.reference} ${r.median.toFixed(2)} ` +
        `(${r.min.toFixed(2)}–${r.max.toFixed(2)}), target ${r.target.op} ${r.target.value}`,
    );
  }
  console.log(`\n${(results.durationSeconds / 60).toFixed(1)} min; wrote:`);
  for (const f of files) console.log(`  ${relative(process.cwd(), f)}`);
}
