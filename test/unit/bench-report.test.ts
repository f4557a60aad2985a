// The bench's report renderer on a small fixture (tables, ratios against targets,
// well-formed SVG), and its load generator against reference A for a second.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/devcluster/control-plane.js';

// bench/ is plain ESM JavaScript (run by node directly): loaded by URL, untyped.
const load = (p: string) => import(new URL(`../../bench/${p}`, import.meta.url).href);

const row = (
  scenario: string,
  subject: string,
  metric: string,
  unit: string,
  values: number[],
) => ({
  group: 'webhook',
  scenario,
  subject,
  metric,
  unit,
  values,
});

async function fixture() {
  const { summarize, passes } = await load('report.mjs');
  const rows = [
    row('validate 10 KB saturation', 'bare', 'server CPU per review', 'µs', [60, 62, 58]),
    row('validate 10 KB saturation', 'annex', 'server CPU per review', 'µs', [70, 72, 68]),
    row(
      'validate 10 KB saturation',
      'bare',
      'reviews/s at saturation',
      'req/s',
      [15000, 15500, 14800],
    ),
    row(
      'validate 10 KB saturation',
      'annex',
      'reviews/s at saturation',
      'req/s',
      [12000, 12100, 11000],
    ),
    row('mutate 10 KB saturation', 'bare', 'server CPU per review', 'µs', [61, 60, 59]),
    row('mutate 10 KB saturation', 'annex', 'server CPU per review', 'µs', [100, 110, 105]),
    row('validate 10 KB at 1000/s', 'bare', 'p50', 'ms', [0.2, 0.25, 0.22]),
    row('validate 10 KB at 1000/s', 'bare', 'p99', 'ms', [0.8, 0.9, 0.7]),
    row('validate 10 KB at 1000/s', 'bare', 'p99.9', 'ms', [2, 3, 2.5]),
    row('validate 10 KB at 1000/s', 'annex', 'p50', 'ms', [0.3, 0.3, 0.35]),
    row('validate 10 KB at 1000/s', 'annex', 'p99', 'ms', [1.2, 1.4, 1.1]),
    row('validate 10 KB at 1000/s', 'annex', 'p99.9', 'ms', [NaN, 4, 5]),
    row(
      'validate 10 KB at 1000/s',
      'annex',
      'new TLS connections in the window',
      'count',
      [0, 0, 0],
    ),
    {
      ...row('CA + leaf', 'annex', 'certificate generation', 'ms', [150, 160, 140]),
      group: 'startup',
    },
  ];
  const ratio = (name: string, reference: string, values: number[], target?: object) => ({
    group: 'webhook',
    name,
    subject: 'annex',
    reference,
    values,
    ...(target ? { target } : {}),
  });
  const ratios = [
    ratio('CPU per review vs A, validate 10 KB saturation', 'bare', [70 / 60, 72 / 62, 68 / 58], {
      op: '<=',
      value: 1.2,
    }),
    ratio('CPU per review vs A, mutate 10 KB saturation', 'bare', [100 / 61, 110 / 60, 105 / 59], {
      op: '<=',
      value: 1.5,
    }),
    ratio('throughput vs B′, validate 10 KB saturation', 'go-hand', [0.9, 1, 1.1]),
  ];
  for (const r of [...rows, ...ratios]) Object.assign(r, summarize(r.values));
  for (const r of ratios as any[]) if (r.target) r.pass = passes(r.median, r.target);
  return {
    version: 1,
    date: '2026-12-01T12:00:00.000Z',
    commit: 'abc1234',
    dirty: false,
    quick: false,
    rounds: 3,
    durationSeconds: 420,
    machine: { cpus: 2, cpuModel: 'Test CPU', memoryGiB: 24, os: 'Linux 6.1', loadavg: [1, 1, 1] },
    versions: { node: 'v20.20.2', openssl: '3.0.17' },
    scenarios: [
      {
        name: 'webhook',
        module: 'bench/webhook/run.mjs',
        seconds: 300,
        notes: ['pepr: not built'],
      },
      {
        name: 'aggregated',
        module: 'bench/aggregated/run.mjs',
        skipped: 'not on this branch',
        notes: [],
      },
    ],
    servers: { bare: 'A: bare node:https', annex: 'annex (feature, public API)' },
    rows,
    ratios,
  };
}

/** Every tag closed in order, attributes quoted, one root <svg>: enough to catch a broken chart. */
function wellFormed(svg: string): boolean {
  const stack: string[] = [];
  const tags = svg.replace(/<title>[^<]*<\/title>/g, '').match(/<[^>]+>/g) ?? [];
  let roots = 0;
  for (const t of tags) {
    if (!/^<\/?[a-z]+(\s+[a-z][a-z0-9-]*(:[a-z]+)?="[^"<]*")*\s*\/?>$/i.test(t)) return false;
    const name = /^<\/?([a-z]+)/i.exec(t)![1]!;
    if (t.startsWith('</')) {
      if (stack.pop() !== name) return false;
    } else if (!t.endsWith('/>')) {
      if (stack.length === 0) roots++;
      stack.push(name);
    }
  }
  return stack.length === 0 && roots === 1 && tags[0]!.startsWith('<svg');
}

describe('bench report', () => {
  it('tables every target with its verdict, the servers side by side, and the notes', async () => {
    const { renderReport } = await load('report.mjs');
    const { markdown } = renderReport(await fixture());
    expect(markdown).toContain(
      '| CPU per review vs A, validate 10 KB saturation | annex (feature, public API) / A: bare node:https | 1.17 (1.16–1.17) | <= 1.20 | pass |',
    );
    expect(markdown).toMatch(
      /\| CPU per review vs A, mutate 10 KB saturation \| .* \| 1\.78 \(1\.64–1\.83\) \| <= 1\.50 \| FAIL \|/,
    );
    expect(markdown).toContain(
      '| throughput vs B′, validate 10 KB saturation | annex (feature, public API) / go-hand | 1.00 (0.90–1.10) |',
    );
    // CPU per review: one line per server, references first, median (min–max).
    expect(markdown).toContain('| A: bare node:https | 60.0 (58.0–62.0) | 60.0 (59.0–61.0) |');
    expect(markdown).toContain(
      '| annex (feature, public API) | 70.0 (68.0–72.0) | 105 (100–110) |',
    );
    // A NaN round is left out of the median, not read as 0.
    expect(markdown).toContain('| 0.30 (0.30–0.35) | 1.20 (1.10–1.40) | 4.50 (4.00–5.00) |');
    expect(markdown).toContain(
      '| CA + leaf | annex | certificate generation | 150 (140–160) | ms |',
    );
    expect(markdown).toContain(
      '**aggregated** (bench/aggregated/run.mjs): skipped — not on this branch',
    );
    expect(markdown).toContain('  - pepr: not built');
    expect(markdown).toContain('2 × Test CPU');
    expect(markdown).toContain('![validate latency](latency-validate.svg)');
  });

  it('draws well-formed SVG charts with one bar per server and group', async () => {
    const { renderReport } = await load('report.mjs');
    const { svgs } = renderReport(await fixture());
    expect(Object.keys(svgs).sort()).toEqual([
      'cpu-mutate.svg',
      'cpu-validate.svg',
      'latency-mutate.svg',
      'latency-validate.svg',
      'throughput-mutate.svg',
      'throughput-validate.svg',
    ]);
    for (const svg of Object.values(svgs) as string[]) expect(wellFormed(svg)).toBe(true);
    const bars = (svg: string) =>
      (svg.match(/<rect x="[\d.]+" y="[\d.]+" width="12"/g) ?? []).length;
    expect(bars(svgs['cpu-validate.svg'])).toBe(2); // bare, annex at 10 KB
    expect(bars(svgs['latency-validate.svg'])).toBe(6); // p50/p99/p99.9 × 2 servers
    expect(svgs['latency-validate.svg']).toContain(
      'annex (feature, public API), p99 @ 1000/s: 1.20 ms',
    );
    expect(bars(svgs['latency-mutate.svg'])).toBe(0); // not measured: no bars, still a chart
    expect(wellFormed('<svg><rect></svg>')).toBe(false);
  });
});

describe('bench load generator', () => {
  let dir: string;
  let server: ReturnType<typeof spawn>;
  let port: number;
  let certs: any;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-bench-test-'));
    certs = await (await load('webhook/certs.mjs')).makeCerts(dir);
    // A port checked free below the ephemeral range (a random one collided: exit 1).
    port = await freePort();
    server = spawn(
      process.execPath,
      [new URL('../../bench/webhook/servers/bare.mjs', import.meta.url).pathname],
      {
        env: {
          ...process.env,
          BENCH_PORT: String(port),
          BENCH_CERT: certs.cert,
          BENCH_KEY: certs.key,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    await new Promise<void>((resolve, reject) => {
      server.stdout!.on('data', (c: Buffer) => String(c).includes('ready') && resolve());
      server.once('exit', (code) => reject(new Error(`bare server exited with ${code}`)));
    });
  });
  afterAll(() => {
    server?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('parses content-length and chunked answers, and waits for incomplete ones', async () => {
    const { parseResponse } = await load('webhook/load.mjs');
    const ok = Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}HTTP/1.1');
    expect(parseResponse(ok)).toEqual([200, 40, false]);
    expect(parseResponse(ok.subarray(0, 39))).toBeNull();
    const chunked = Buffer.from(
      'HTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
    );
    expect(parseResponse(chunked)).toEqual([429, chunked.length, true]);
    expect(parseResponse(chunked.subarray(0, chunked.length - 2))).toBeNull();
  });

  it('checks reference A, then measures it closed and open loop on warm connections', async () => {
    const { checkAnswers } = await load('webhook/run.mjs');
    await checkAnswers('bare', port, certs.ca, { validate: '/validate', mutate: '/mutate' });
    const { runJob } = await load('webhook/load.mjs');
    const { reviewSet } = await load('reviews.mjs');
    const base = {
      port,
      ca: certs.caPem,
      path: '/mutate?timeout=10s',
      bodies: reviewSet(5, 4),
      pid: server.pid,
      connections: 4,
    };
    const closed = await runJob({ ...base, mode: 'closed', warmupMs: 100, durationMs: 300 });
    expect(closed.completed).toBeGreaterThan(20);
    expect(closed.errors).toBe(0);
    expect(closed.throughput).toBeGreaterThan(100);
    const open = await runJob({ ...base, mode: 'open', rate: 400, warmupMs: 50, durationMs: 500 });
    // 400/s for 0.5 s: about 200 reviews timed, on the 4 connections opened above.
    expect(open.samples).toBeGreaterThan(150);
    expect(open.samples).toBeLessThan(250);
    expect(open.newConnections).toBe(0);
    expect(open.p50).toBeGreaterThan(0);
    expect(open.p999).toBeGreaterThanOrEqual(open.p50);
  });
});
