// Start-up figures (issue 13 item 4): certificate generation (CA + serving leaf, as annex
// makes them: src/certs via dist/, wall time, ≥ 10 per round) and cold start of `annex
// serve` (pinned to core 0) to the first 200 from /livez and from /readyz, with the
// certificates present and on a first start that generates them.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort, httpsStatus } from '../net.mjs';

const root = join(import.meta.dirname, '../..');
const { ensureCertificates } = await import(join(root, 'dist/certs/index.js'));

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function certOnce(dir) {
  const t0 = performance.now();
  await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  return performance.now() - t0;
}

/** ms from spawn to the first 200 of each path; the process is killed afterwards. */
async function coldStart(work, generate) {
  const port = await freePort();
  const certs = join(work, 'certs');
  if (generate) rmSync(certs, { recursive: true, force: true });
  const config = join(work, 'annex.yaml');
  writeFileSync(
    config,
    `server: { host: 127.0.0.1, port: ${port}, shutdownDelaySeconds: 0 }\n` +
      `tls: { dir: ${JSON.stringify(certs)} }\n`,
  );
  const args = [join(root, 'dist/cli/main.js'), 'serve', '--config', config];
  const t0 = performance.now();
  const child =
    availableParallelism() >= 2
      ? spawn('taskset', ['-c', '0', process.execPath, ...args], { stdio: 'ignore' })
      : spawn(process.execPath, args, { stdio: 'ignore' });
  const until = async (path) => {
    while (performance.now() - t0 < 30_000 && child.exitCode === null) {
      if ((await httpsStatus(port, path)) === 200) return performance.now() - t0;
      await sleep(5);
    }
    return NaN;
  };
  try {
    const [livez, readyz] = await Promise.all([until('/livez'), until('/readyz')]);
    return { livez, readyz };
  } finally {
    child.kill('SIGKILL');
    await new Promise((r) => (child.exitCode === null ? child.once('exit', r) : r()));
  }
}

export async function run(ctx) {
  const work = mkdtempSync(join(tmpdir(), 'annex-bench-startup-'));
  const perRound = ctx.quick ? 3 : 10;
  const values = { cert: [], live: [], ready: [], liveGen: [], readyGen: [] };
  try {
    await certOnce(join(work, 'warm')); // load node-forge and the crypto bindings once
    for (let round = 0; round < ctx.rounds; round++) {
      const times = [];
      for (let i = 0; i < perRound; i++) times.push(await certOnce(join(work, `c${round}-${i}`)));
      values.cert.push(median(times));
      const gen = await coldStart(work, true);
      const warm = await coldStart(work, false);
      values.liveGen.push(gen.livez);
      values.readyGen.push(gen.readyz);
      values.live.push(warm.livez);
      values.ready.push(warm.readyz);
      ctx.log(
        `startup round ${round + 1}/${ctx.rounds}: CA + leaf ${values.cert.at(-1).toFixed(0)} ms, ` +
          `ready ${warm.readyz.toFixed(0)} ms (${gen.readyz.toFixed(0)} ms generating certificates)`,
      );
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const row = (scenario, metric, v) => ({
    group: 'startup',
    scenario,
    subject: 'annex',
    metric,
    unit: 'ms',
    values: v,
  });
  return {
    rows: [
      row(`CA + leaf (median of ${perRound})`, 'certificate generation', values.cert),
      row('cold start, certificates present', 'to /livez 200', values.live),
      row('cold start, certificates present', 'to /readyz 200', values.ready),
      row('cold start, first start (generates CA + leaf)', 'to /livez 200', values.liveGen),
      row('cold start, first start (generates CA + leaf)', 'to /readyz 200', values.readyGen),
    ],
    ratios: [
      {
        group: 'startup',
        name: 'CA + leaf vs 200 ms',
        subject: 'annex',
        reference: '200 ms',
        values: values.cert.map((v) => v / 200),
        target: { op: '<=', value: 1 },
      },
    ],
    notes: [
      'certificate generation: ensureCertificates() into an empty folder (RSA-2048 CA + leaf, files written), wall time in the bench process',
    ],
  };
}
