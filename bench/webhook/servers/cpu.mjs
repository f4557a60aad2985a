// A quick sanity figure, not the bench: server CPU per review of the reference servers
// for one payload size, closed loop with Debian's wrk (16 keep-alive connections, one
// thread) pinned to CPU 0 and the server pinned to CPU 1, server CPU read from
// /proc/PID/stat (utime+stime) around each run, servers alternated for every round.
//
// CLI: node bench/webhook/servers/cpu.mjs [--kb 10] [--seconds 5] [--rounds 3] [name ...]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildServer } from './build.mjs';
import { makeCert, startServer } from './check.mjs';
import { deployment, review } from './reviews.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    kb: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
  },
});
const rounds = Number(values.rounds);
const names = positionals.length ? positionals : ['controller-runtime', 'go-hand', 'pepr'];
const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));

function cpuMicros(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond) * 1e6;
}

function wrk(port, path, script, seconds) {
  const out = execFileSync(
    'taskset',
    [
      '-c',
      '0',
      'wrk',
      '-t1',
      '-c16',
      `-d${seconds}s`,
      '-s',
      script,
      `https://127.0.0.1:${port}${path}`,
    ],
    { encoding: 'utf8' },
  );
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  if (/Non-2xx/.test(out) || !requests) throw new Error(`wrk: ${out}`);
  return requests;
}

const dir = mkdtempSync(join(tmpdir(), 'annex-bench-cpu-'));
try {
  const tls = await makeCert(dir);
  const scripts = {};
  for (const path of ['/validate', '/mutate']) {
    const body = JSON.stringify(review(deployment({ kb: Number(values.kb) })));
    scripts[path] = join(dir, `${path.slice(1)}.lua`);
    writeFileSync(
      scripts[path],
      `wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = ${JSON.stringify(body)}\n`,
    );
  }
  const servers = {};
  for (const name of names)
    servers[name] = await startServer(buildServer(name), tls, { cpus: '1' });
  const results = {};
  for (let round = 0; round < rounds; round++) {
    for (const name of names) {
      for (const path of ['/validate', '/mutate']) {
        const { port, pid } = servers[name];
        if (round === 0) wrk(port, path, scripts[path], 2); // warm-up (JIT, GC sizing)
        const before = cpuMicros(pid);
        const requests = wrk(port, path, scripts[path], Number(values.seconds));
        const perRequest = (cpuMicros(pid) - before) / requests;
        (results[`${name} ${path}`] ??= []).push({
          perRequest,
          rps: requests / Number(values.seconds),
        });
      }
    }
  }
  for (const s of Object.values(servers)) s.stop();
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`${values.kb} KB review, ${rounds} rounds of ${values.seconds} s; median (min–max)`);
  for (const [key, runs] of Object.entries(results)) {
    const cpu = runs.map((r) => r.perRequest);
    const rps = runs.map((r) => r.rps);
    console.log(
      `${key.padEnd(30)} ${median([...cpu]).toFixed(1)} µs CPU/review (${Math.min(...cpu).toFixed(1)}–` +
        `${Math.max(...cpu).toFixed(1)}), ${median([...rps]).toFixed(0)} reviews/s`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
