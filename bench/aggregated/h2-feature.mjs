// For bench/aggregated/h2-direct.mjs: `annex serve --load` this module and annex serves the
// metrics groups over a MetricsStore filled with synthetic scrapes (pods.mjs, as the
// aggregated bench's server.mjs does), so a list carries realistic objects. It imports the
// annex under test from BENCH_ANNEX_DIST (that tree's dist/), so a before-build serves the
// same objects through its own code.
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { fill } from './pods.mjs';

const dist = process.env.BENCH_ANNEX_DIST;
const { MetricsStore, metricsGroups } = await import(
  pathToFileURL(join(dist, 'metrics/index.js')).href
);
const store = new MetricsStore({ resolutionMs: 15_000 });
fill(store, Number(process.env.BENCH_PODS ?? 1000), 10);

export default {
  name: 'bench-h2-metrics',
  groups: [metricsGroups({ nodes: store.nodes, pods: store.pods })],
};
