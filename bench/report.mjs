// The report of one bench run: docs/bench/README.md and SVG charts, from the results JSON
// alone (bench/run.mjs writes it; `node bench/report.mjs FILE [DIR]` re-renders one).
// Plain SVG strings: bars with min–max whiskers, no charting dependency.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const summarize = (values) => {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return { median: NaN, min: NaN, max: NaN };
  const m = v.length >> 1;
  const median = v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  return { median, min: v[0], max: v[v.length - 1] };
};

export const passes = (median, target) =>
  Number.isFinite(median) && (target.op === '<=' ? median <= target.value : median >= target.value);

export function fmt(x) {
  if (!Number.isFinite(x)) return '–';
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

const spread = (s) =>
  s.min === s.max ? fmt(s.median) : `${fmt(s.median)} (${fmt(s.min)}–${fmt(s.max)})`;

const esc = (s) =>
  String(s).replace(
    /[&<>"]/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c],
  );

const COLORS = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#9c755f',
];

/**
 * A grouped bar chart: `groups` along x, one bar per series in each group, the median as
 * the bar and min–max as a whisker. `log` for latencies, which span decades.
 */
export function barChart({ title, unit, groups, series, log = false }) {
  const barW = 14;
  const gap = 18;
  const groupW = series.length * barW + gap;
  const left = 64;
  const top = 40;
  const plotH = 220;
  const legendH = 18 * Math.ceil(series.length / 3);
  const width = Math.max(left + groups.length * groupW + 20, 520);
  const height = top + plotH + 40 + legendH + 10;
  const all = series.flatMap((s) => s.values.flatMap((v) => (v ? [v.max, v.median] : [])));
  const finite = all.filter((x) => Number.isFinite(x) && (!log || x > 0));
  const hi = finite.length ? Math.max(...finite) : 1;
  let y;
  let ticks;
  if (log) {
    const lo = Math.min(...finite.filter((x) => x > 0), hi);
    const e0 = Math.floor(Math.log10(lo || 1));
    const e1 = Math.max(e0 + 1, Math.ceil(Math.log10(hi || 1)));
    y = (v) => top + plotH - ((Math.log10(Math.max(v, 10 ** e0)) - e0) / (e1 - e0)) * plotH;
    ticks = Array.from({ length: e1 - e0 + 1 }, (_, i) => 10 ** (e0 + i));
  } else {
    const step = 10 ** Math.floor(Math.log10(hi || 1));
    const max = Math.ceil(hi / step) * step || 1;
    y = (v) => top + plotH - (v / max) * plotH;
    ticks = Array.from({ length: 5 }, (_, i) => (max * i) / 4);
  }
  const base = log ? top + plotH : y(0);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#fff"/>`,
    `<text x="${left}" y="20" font-size="13" font-weight="bold">${esc(title)}</text>`,
    `<text x="8" y="${top - 8}" fill="#555">${esc(unit)}${log ? ' (log)' : ''}</text>`,
  ];
  for (const t of ticks) {
    const ty = y(t).toFixed(1);
    out.push(
      `<line x1="${left}" x2="${width - 10}" y1="${ty}" y2="${ty}" stroke="#ddd"/>`,
      `<text x="${left - 4}" y="${ty}" text-anchor="end" dominant-baseline="middle" fill="#555">${esc(fmt(t))}</text>`,
    );
  }
  groups.forEach((g, gi) => {
    const gx = left + gi * groupW + gap / 2;
    series.forEach((s, si) => {
      const v = s.values[gi];
      if (!v || !Number.isFinite(v.median)) return;
      const x = gx + si * barW;
      const yt = y(v.median);
      out.push(
        `<rect x="${x}" y="${yt.toFixed(1)}" width="${barW - 2}" height="${Math.max(0, base - yt).toFixed(1)}" fill="${COLORS[si % COLORS.length]}"><title>${esc(`${s.name}, ${g}: ${fmt(v.median)} ${unit}`)}</title></rect>`,
      );
      if (v.max > v.min) {
        const cx = x + (barW - 2) / 2;
        out.push(
          `<line x1="${cx}" x2="${cx}" y1="${y(v.min).toFixed(1)}" y2="${y(v.max).toFixed(1)}" stroke="#222"/>`,
        );
      }
    });
    out.push(
      `<text x="${gx + (series.length * barW) / 2}" y="${top + plotH + 16}" text-anchor="middle">${esc(g)}</text>`,
    );
  });
  out.push(`<line x1="${left}" x2="${width - 10}" y1="${base}" y2="${base}" stroke="#888"/>`);
  series.forEach((s, si) => {
    const lx = left + (si % 3) * 170;
    const ly = top + plotH + 34 + 18 * Math.floor(si / 3);
    out.push(
      `<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${COLORS[si % COLORS.length]}"/>`,
      `<text x="${lx + 14}" y="${ly}">${esc(s.name)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

const PATHS = ['validate', 'mutate'];

/** Servers in report order: the references first, then annex's variants. */
function serverOrder(results) {
  const order = [
    'bare',
    'controller-runtime',
    'go-hand',
    'pepr',
    'annex',
    'annex-builtins',
    'annex-policies',
  ];
  const seen = [
    ...new Set(results.rows.filter((r) => r.group === 'webhook').map((r) => r.subject)),
  ];
  return [...order.filter((n) => seen.includes(n)), ...seen.filter((n) => !order.includes(n))];
}

/** A webhook server's label; other groups' subjects are their own words. */
const label = (results, name, group = 'webhook') =>
  group === 'webhook' || group === 'memory' ? (results.servers?.[name] ?? name) : name;

function cell(results, scenario, subject, metric) {
  return results.rows.find(
    (r) => r.scenario === scenario && r.subject === subject && r.metric === metric,
  );
}

function webhookScenarios(results) {
  const sc = [...new Set(results.rows.filter((r) => r.group === 'webhook').map((r) => r.scenario))];
  const sizes = [...new Set(sc.filter((s) => s.endsWith('saturation')).map((s) => s.split(' ')[1]))]
    .map(Number)
    .sort((a, b) => a - b);
  const open = [...new Set(sc.filter((s) => / at \d+\/s$/.test(s)))];
  const rates = [...new Set(open.map((s) => Number(/at (\d+)\/s/.exec(s)[1])))].sort(
    (a, b) => a - b,
  );
  const openKb = open.length ? Number(open[0].split(' ')[1]) : NaN;
  return { sizes, rates, openKb };
}

function pivot(results, names, columns, metric) {
  const head = `| server | ${columns.map((c) => c.title).join(' | ')} |`;
  const sep = `| --- | ${columns.map(() => '---:').join(' | ')} |`;
  const lines = names.map((n) => {
    const cells = columns.map((c) => {
      const r = cell(results, c.scenario, n, c.metric ?? metric);
      return r ? spread(r) : '–';
    });
    return `| ${label(results, n)} | ${cells.join(' | ')} |`;
  });
  return [head, sep, ...lines].join('\n');
}

/** The Markdown summary and the charts (file name → SVG text) of one results object. */
export function renderReport(results) {
  const names = serverOrder(results);
  const { sizes, rates, openKb } = webhookScenarios(results);
  const svgs = {};
  const md = [];
  const when = `${results.date} · commit \`${results.commit}\`${results.dirty ? ' (uncommitted changes)' : ''}`;
  md.push(
    '# annex benchmarks',
    '',
    `Generated by \`npm run bench\` (bench/run.mjs) — ${when} · ${results.quick ? 'quick smoke run (BENCH_QUICK=1): not for quoting' : 'full run'} · ${results.rounds} round(s) · ${fmt(results.durationSeconds)} s. ` +
      'Every figure is the median over rounds, with the min–max across rounds in brackets. ' +
      'The machine is shared and noisy: read the ratios, which compare servers measured in the same round.',
    '',
    '## Targets (issue 13)',
    '',
    '| ratio | subject / reference | median (min–max) | target | |',
    '| --- | --- | ---: | ---: | --- |',
  );
  const targeted = results.ratios.filter((r) => r.target);
  for (const r of targeted) {
    md.push(
      `| ${r.name} | ${label(results, r.subject, r.group)} / ${label(results, r.reference, r.group)} | ${spread(r)} | ${r.target.op} ${fmt(r.target.value)} | ${r.pass ? 'pass' : 'FAIL'} |`,
    );
  }
  if (!targeted.length) md.push('| (none measured) | | | | |');
  const free = results.ratios.filter((r) => !r.target);
  if (free.length) {
    md.push(
      '',
      'Other ratios (no target):',
      '',
      '| ratio | subject / reference | median (min–max) |',
      '| --- | --- | ---: |',
    );
    for (const r of free)
      md.push(
        `| ${r.name} | ${label(results, r.subject, r.group)} / ${label(results, r.reference, r.group)} | ${spread(r)} |`,
      );
  }

  if (names.length) {
    const closed = (metric) =>
      PATHS.flatMap((p) =>
        sizes.map((kb) => ({
          title: `${p} ${kb} KB`,
          scenario: `${p} ${kb} KB saturation`,
          metric,
        })),
      );
    md.push(
      '',
      '## Webhooks',
      '',
      'Keep-alive HTTPS, HTTP/1.1, Deployment CREATE AdmissionReviews; server on core 0, load generator on core 1.',
      '',
      '### Server CPU per review (µs), closed loop, 16 connections',
      '',
      pivot(results, names, closed('server CPU per review')),
      '',
      '### Reviews/s at saturation, closed loop, 16 connections',
      '',
      pivot(results, names, closed('reviews/s at saturation')),
    );
    md.push(
      '',
      '### Server core used during the saturation windows (%)',
      '',
      'A server at saturation should use ~100 % of its core; far less means the core was shared with other work on this machine, and the throughput beside it is the share it got, not its capacity. CPU per review holds better (its own accounting).',
      '',
      pivot(results, names, closed('server core used')),
      '',
      '### Load generator CPU during the saturation windows (%)',
      '',
      pivot(results, names, closed('load generator CPU')),
    );
    for (const path of PATHS) {
      const cols = rates.flatMap((rate) =>
        ['p50', 'p99', 'p99.9'].map((q) => ({
          title: `${q} @ ${fmt(rate)}/s`,
          scenario: `${path} ${openKb} KB at ${rate}/s`,
          metric: q,
        })),
      );
      md.push(
        '',
        `### ${path}: latency (ms) from the due time, open loop, ${openKb} KB, 25 connections`,
        '',
        pivot(results, names, cols),
      );
    }
    const newConns = names.map((n) => {
      const rs = results.rows.filter(
        (r) => r.subject === n && r.metric === 'new TLS connections in the window',
      );
      return `${label(results, n)}: ${Math.max(0, ...rs.flatMap((r) => r.values))}`;
    });
    md.push(
      '',
      `New TLS connections inside any measurement window (after warm-up; most in one window): ${newConns.join(' · ')}.`,
    );
    md.push(
      '',
      '### Memory (MB, VmRSS)',
      '',
      pivot(results, names, [
        { title: 'idle, after start', scenario: 'RSS idle', metric: 'RSS idle' },
        {
          title: 'under load',
          scenario: 'RSS under load (peak of the saturation runs)',
          metric: 'RSS under load (peak of the saturation runs)',
        },
      ]),
    );

    const series = (scenarioOf, metric) =>
      names.map((n) => ({
        name: label(results, n),
        values: sizes.map((kb) => {
          const r = cell(results, scenarioOf(kb), n, metric);
          return r ? { median: r.median, min: r.min, max: r.max } : null;
        }),
      }));
    md.push('', '### Charts', '');
    for (const path of PATHS) {
      svgs[`throughput-${path}.svg`] = barChart({
        title: `${path}: reviews/s at saturation per payload size`,
        unit: 'req/s',
        groups: sizes.map((kb) => `${kb} KB`),
        series: series((kb) => `${path} ${kb} KB saturation`, 'reviews/s at saturation'),
      });
      svgs[`cpu-${path}.svg`] = barChart({
        title: `${path}: server CPU per review per payload size`,
        unit: 'µs',
        groups: sizes.map((kb) => `${kb} KB`),
        series: series((kb) => `${path} ${kb} KB saturation`, 'server CPU per review'),
      });
      const groups = rates.flatMap((rate) =>
        ['p50', 'p99', 'p99.9'].map((q) => `${q} @ ${rate}/s`),
      );
      svgs[`latency-${path}.svg`] = barChart({
        title: `${path}: latency percentiles, open loop, ${openKb} KB`,
        unit: 'ms',
        log: true,
        groups,
        series: names.map((n) => ({
          name: label(results, n),
          values: rates.flatMap((rate) =>
            ['p50', 'p99', 'p99.9'].map((q) => {
              const r = cell(results, `${path} ${openKb} KB at ${rate}/s`, n, q);
              return r ? { median: r.median, min: r.min, max: r.max } : null;
            }),
          ),
        })),
      });
      md.push(
        `![${path} latency](latency-${path}.svg)`,
        '',
        `![${path} throughput](throughput-${path}.svg) ![${path} CPU](cpu-${path}.svg)`,
        '',
      );
    }
  }

  const otherGroups = [...new Set(results.rows.map((r) => r.group))].filter(
    (g) => g !== 'webhook' && g !== 'memory',
  );
  for (const g of otherGroups) {
    md.push(
      '',
      `## ${g[0].toUpperCase()}${g.slice(1)}`,
      '',
      '| scenario | subject | metric | median (min–max) | unit |',
      '| --- | --- | --- | ---: | --- |',
    );
    for (const r of results.rows.filter((x) => x.group === g)) {
      md.push(
        `| ${r.scenario} | ${label(results, r.subject, g)} | ${r.metric} | ${spread(r)} | ${r.unit} |`,
      );
    }
  }

  md.push('', '## Scenarios and notes', '');
  for (const s of results.scenarios) {
    md.push(
      `- **${s.name}** (${s.module}): ${s.skipped ? `skipped — ${s.skipped}` : `${fmt(s.seconds)} s`}`,
    );
    for (const n of s.notes ?? []) md.push(`  - ${n}`);
  }
  const m = results.machine;
  const load = (l) => l.map((x) => x.toFixed(2)).join(' / ');
  if (results.uncommitted?.length) {
    md.push(
      '',
      `Files under bench/ that ran but were not committed at \`${results.commit}\`: ${results.uncommitted.map((f) => `\`${f}\``).join(', ')}.`,
    );
  }
  md.push(
    '',
    '## Machine and versions',
    '',
    `- ${m.cpus} × ${m.cpuModel}, ${fmt(m.memoryGiB)} GiB, ${m.os}; load average (1/5/15 min) at start ${load(m.loadavg)}${m.loadavgEnd ? `, at the end ${load(m.loadavgEnd)}` : ''}`,
    ...Object.entries(results.versions).map(([k, v]) => `- ${k}: ${v}`),
    '',
    METHOD,
  );
  return { markdown: `${md.join('\n')}\n`, svgs };
}

export const METHOD = `## Method

- **Servers.** Each server under test is its own process (bench/webhook/servers/index.mjs),
  pinned with \`taskset -c 0\`; the load generator (bench/webhook/load.mjs) is pinned to core 1.
  All serve the same ECDSA P-256 certificate. Reference A (\`bare\`) is node:https doing the
  JSON parse, the two rules and the JSON stringify, nothing else; \`annex\` is a feature file
  written with the public API (bench/webhook/servers/annex/feature.mjs) run by \`annex serve
  --load\` with the default configuration (info logs on, one line per review, to stderr, here
  /dev/null); \`annex-builtins\` is the names + defaults webhooks; \`annex-policies\` is
  \`annex serve --policies DIR\` with the five demo policies and five more
  (bench/webhook/servers/annex-policies/), read from files as without an API server. Before
  any load, every server must answer a check: the same uid, allowed, a JSON Patch with the
  label and the defaulted requests, and for the exact-rule servers a 422 naming
  \`metadata.name\` for a bad name.
- **Builds.** B and B′ are built once by bench/webhook/servers/build.mjs into
  \`~/.cache/annex/bench/bin\` (keyed by a hash of their sources and the Go version) and Pepr
  installed there; warm, that costs nothing. A cold build (empty GOCACHE, modules already
  downloaded) is about 3 min of CPU for controller-runtime (1.5–2 min of wall time on two
  idle cores; 13 min on this shared machine) and about 1.5 min wall for go-hand (mostly the
  standard library); Pepr's \`npm ci\` about 30 s.
- **Warm-up, alternation.** Every server answers both paths for a while first (JIT). Then in
  each round every cell (payload × path × mode) is measured on every server back to back, the
  server order rotated per round. Figures are medians over rounds.
- **CPU per review** is Δ(utime + stime) of the server process from /proc/PID/stat across the
  measurement window, divided by the reviews answered in it (clock ticks: ±1 % at saturation).
- **Saturation** is a closed loop on 16 keep-alive connections, one review in flight each;
  a window lasts 1 s, stretched up to 2 s until the server has used 0.5 s of CPU.
- **Latency** is an open loop on 25 keep-alive connections (the API server's idle pool): review
  *i* is due at start + *i*/rate, waits for a free connection if none is idle, and its latency
  runs from the due time to the last byte of the answer, so a server that stalls is charged
  for every review it held up (no coordinated omission). Reviews still waiting 1 s after
  the window are charged up to then and counted as failed. A server that cannot sustain the
  rate shows seconds here: that is its queue.
- **Why our own generator.** autocannon times each request from when it was actually sent;
  its \`-R\` + \`-C\` (correct coordinated omission) back-fills synthetic samples from the
  expected interval instead of timing from the due time; wrk has no rate mode (wrk2 is not
  packaged); hey's \`-q\` is a per-worker QPS limit timed from the send; h2load's \`-r\` is a
  connection rate. None times an open loop from the due time on a fixed set of keep-alive
  connections, so
  load.mjs does: raw HTTP/1.1 over node:tls, a pacer that spins on setImmediate (timers would
  add up to a millisecond of lag of their own), latencies kept in full and sorted.
- **New TLS connections** are the handshakes the generator had to make inside a window
  (every connection to the server is the generator's, so this is the server's count too).
- **Memory** is VmRSS from /proc/PID/status: after start (idle) and the peak at the end of
  the saturation windows (under load).
`;

export function writeReport(results, dir) {
  mkdirSync(dir, { recursive: true });
  const { markdown, svgs } = renderReport(results);
  writeFileSync(join(dir, 'README.md'), markdown);
  for (const [name, svg] of Object.entries(svgs)) writeFileSync(join(dir, name), svg);
  return [join(dir, 'README.md'), ...Object.keys(svgs).map((n) => join(dir, n))];
}

if (process.argv[1] === import.meta.filename && process.argv[2]) {
  const results = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  for (const f of writeReport(results, process.argv[3] ?? 'docs/bench')) console.log(f);
}
