// Self time by function of a V8 .cpuprofile (node --cpu-prof; bench/aggregated/run.mjs
// writes them with ANNEX_BENCH_CPU_PROF=dir), by sample count: a sample's time delta
// would charge the time a loaded machine kept the process descheduled to whatever ran next.
// Usage: node bench/cpuprofile-summary.mjs FILE [top=40] [skip seconds=0 (start-up, warm-up)]
import { readFileSync } from 'node:fs';

const [file, top = '40', skip = '0'] = process.argv.slice(2);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nameOf = new Map(
  profile.nodes.map(({ id, callFrame: f }) => [
    id,
    `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\//, '')}:${f.lineNumber + 1}`,
  ]),
);
const self = new Map();
let at = 0;
let busy = 0;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0;
  const name = nameOf.get(id);
  if (at < Number(skip) * 1e6 || name.startsWith('(idle)')) return;
  busy++;
  self.set(name, (self.get(name) ?? 0) + 1);
});
console.log(`${busy} busy samples`);
for (const [name, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(top))) {
  console.log(`${((100 * n) / busy).toFixed(1).padStart(5)}%  ${name}`);
}
