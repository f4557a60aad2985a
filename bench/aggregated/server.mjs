// annex for the aggregated-API bench, as its own process (so /proc accounts its CPU alone):
// annex from dist/ with the metrics group over a MetricsStore filled with synthetic scrapes.
// The built-in metrics feature is off and the same groups are declared by an extra feature
// over a store the bench can feed; listing, serving, auth and watch code are annex's own.
//
//   node bench/aggregated/server.mjs <kubeconfig> <certsDir> <pods>
//
// Prints {"port":N} once serving. Lines on stdin:
//   "tick <i>"  prepares the last scrape again with pod i's memory changed (one MODIFIED event);
//   "scrape"    prepares a scrape 15 s later: every pod changes (the regular collection);
//   "store"     stores what was prepared (so that making the synthetic batch is not timed).
// "tick" and "scrape" answer {}; "store" answers {"storedAt": epoch ms, "storeMs": ms}.
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { batch, fill } from './pods.mjs';

const dist = new URL('../../dist/', import.meta.url);
const [kubeconfig, certsDir, podsArg] = process.argv.slice(2);
const pods = Number(podsArg);
const NODES = 100;

const { loadConfig } = await import(new URL('config/load.js', dist).href);
const { createLogger } = await import(new URL('log.js', dist).href);
const { startAnnex } = await import(new URL('server/start.js', dist).href);
const { MetricsStore, metricsGroups } = await import(new URL('metrics/index.js', dist).href);

const store = new MetricsStore({ resolutionMs: 15_000 });
let last = fill(store, pods, NODES);
const config = loadConfig({
  overrides: {
    server: { host: '127.0.0.1', port: 0 },
    tls: { dir: certsDir, service: 'annex', namespace: 'annex-system' },
    kube: { kubeconfig },
    metrics: { enabled: false },
    log: { level: 'warn' },
  },
});
const feature = {
  name: 'bench-metrics',
  groups: [metricsGroups({ nodes: store.nodes, pods: store.pods })],
};
const annex = await startAnnex(config, createLogger('warn'), [feature]);
process.stdout.write(`${JSON.stringify({ port: annex.port })}\n`);

const bumps = new Map();
let prepared;
createInterface({ input: process.stdin }).on('line', (line) => {
  const [cmd, arg] = line.trim().split(' ');
  let answer = {};
  if (cmd === 'tick') {
    const i = Number(arg) % pods;
    bumps.set(i, (bumps.get(i) ?? 0) + 4096);
    prepared = batch(pods, NODES, last.tsNs, last.cpuNs, bumps);
  } else if (cmd === 'scrape') {
    last = { tsNs: last.tsNs + 15_000_000_000n, cpuNs: last.cpuNs + 3_750_000_000n };
    prepared = batch(pods, NODES, last.tsNs, last.cpuNs, bumps);
  } else if (cmd === 'store') {
    const t0 = performance.now();
    store.store(prepared);
    const t1 = performance.now();
    answer = { storedAt: performance.timeOrigin + t1, storeMs: t1 - t0 };
  } else return;
  process.stdout.write(`${JSON.stringify(answer)}\n`);
});
process.once('SIGTERM', () => void annex.close().then(() => process.exit(0)));
