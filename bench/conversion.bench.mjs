// CRD conversion webhook cost, against a real etcd + kube-apiserver on loopback: N CronTabs
// stored as v1beta1, listed through v1 (the non-storage version), once with annex's
// conversion webhook (the examples/crontab conversion) and once with `strategy: None`
// (the seed's CRD, another group), alternately, one unpaged LIST at a time. Reported:
// the LIST latency p50/p99 and per object for both, and annex's own time per review and
// per object (from its "conversion review" log lines), with objects per review.
//
//   npm run build && node bench/conversion.bench.mjs [objects=1000] [runs=30]
//
// Not part of `npm test`: it needs the control plane binaries (devcluster/build.sh).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';

const dist = new URL('../dist/', import.meta.url);
const load = (p) => import(new URL(p, dist).href);
const [objects = 1000, runs = 30] = process.argv.slice(2).map(Number);

const { ControlPlane, freePort } = await load('devcluster/control-plane.js');
const { ensureBinaries, pinnedVersions } = await load('devcluster/binaries.js');
const {
  crdConversion,
  customResourceDefinition,
  startAnnex,
  loadConfig,
  createLogger,
  KubeClient,
} = await load('index.js');
const { defaultCredentials } = await load('kube/kubeconfig.js');

// The examples/crontab conversion (that file is TypeScript; this one runs from dist/).
const TIME = 'crontab.example.com/time';
const schema = (props) => ({
  openAPIV3Schema: {
    type: 'object',
    properties: Object.fromEntries(props.map((p) => [p, { type: 'string' }])),
  },
});
const crd = (group) =>
  crdConversion({
    group,
    kind: 'CronTab',
    plural: 'crontabs',
    hub: 'v1',
    versions: {
      v1beta1: {
        toHub({ metadata: { annotations = {}, ...meta }, ...o }) {
          const { [TIME]: time, ...rest } = annotations;
          const metadata = Object.keys(rest).length ? { ...meta, annotations: rest } : meta;
          return time === undefined ? { ...o, metadata } : { ...o, metadata, time };
        },
        fromHub({ time, ...o }) {
          if (time === undefined) return o;
          return {
            ...o,
            metadata: { ...o.metadata, annotations: { ...o.metadata.annotations, [TIME]: time } },
          };
        },
      },
    },
    crd: {
      versions: [
        { name: 'v1beta1', storage: true, schema: schema(['host', 'port']) },
        { name: 'v1', storage: false, schema: schema(['host', 'port', 'time']) },
      ],
    },
  });
const webhook = crd('example.com');
const none = crd('none.example.com');

const bins = ensureBinaries();
if ('missing' in bins) {
  console.error(`bench/conversion: ${bins.missing}`);
  process.exit(1);
}

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const row = (label, xs, per) =>
  `${label.padEnd(46)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms  p99 ${pct(xs, 99).toFixed(1).padStart(6)} ms  ` +
  `per object p50 ${((pct(xs, 50) / per) * 1000).toFixed(1).padStart(6)} µs  p99 ${((pct(xs, 99) / per) * 1000).toFixed(1).padStart(6)} µs`;

/**
 * One control plane: N CronTabs in each CRD, then `runs` alternating LISTs through v1.
 * With the watch cache (the default) a LIST is served from the v1 cache, whose objects
 * were converted once as they arrived; without it every LIST reads etcd and converts.
 */
async function phase(watchCache) {
  const cp = new ControlPlane(
    bins.binDir,
    pinnedVersions().kubernetes,
    watchCache ? [] : ['--watch-cache=false'],
  );
  const info = await cp.start((l) => console.error(`bench/conversion: ${l}`));
  const certs = mkdtempSync(join(tmpdir(), 'annex-bench-certs-'));
  const kubectl = (args, input) =>
    execFileSync(info.kubectl, ['--kubeconfig', info.adminKubeconfig, ...args], {
      input,
      encoding: 'utf8',
    });

  // annex's own time per review, from its log lines (ms, objects).
  const reviews = [];
  const sink = new Writable({
    write(chunk, _e, done) {
      for (const line of String(chunk).split('\n')) {
        if (!line.includes('"conversion review"')) continue;
        const e = JSON.parse(line);
        reviews.push({ ms: e.ms, objects: e.objects, result: e.result });
      }
      done();
    },
  });
  const port = await freePort();
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port },
      tls: { dir: certs },
      kube: { kubeconfig: info.adminKubeconfig },
      admission: { names: { enabled: false }, defaults: { enabled: false } },
      metrics: { enabled: false },
      log: { level: 'info' },
    },
  });
  const annex = await startAnnex(config, createLogger('info', sink), [
    { name: 'crontab', conversions: [webhook] },
  ]);
  const webhookCrd = customResourceDefinition(webhook, { url: `https://127.0.0.1:${port}` });
  webhookCrd.spec.conversion.webhook.clientConfig.caBundle = readFileSync(
    join(certs, 'ca.crt'),
  ).toString('base64');
  const noneCrd = customResourceDefinition(none, { url: 'https://unused' });
  noneCrd.spec.conversion = { strategy: 'None' };
  kubectl(['apply', '-f', '-'], [webhookCrd, noneCrd].map((o) => stringify(o)).join('---\n'));
  kubectl([
    'wait',
    '--for=condition=Established',
    'crd/crontabs.example.com',
    'crd/crontabs.none.example.com',
  ]);
  kubectl(['create', 'namespace', 'bench']);

  const kube = new KubeClient(defaultCredentials({ kubeconfig: info.adminKubeconfig }), {
    timeoutMs: 60_000,
  });
  async function fill(group) {
    const path = `/apis/${group}/v1beta1/namespaces/bench/crontabs`;
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < objects; i = next++) {
        const body = {
          apiVersion: `${group}/v1beta1`,
          kind: 'CronTab',
          metadata: { name: `ct-${String(i).padStart(5, '0')}`, annotations: { [TIME]: '02:00' } },
          host: `db-${i}.example.com`,
          port: '5432',
        };
        for (;;) {
          try {
            await kube.create(path, body);
            break;
          } catch (e) {
            if (e.code !== 404) throw e; // the new CRD's endpoint is not served yet
            await new Promise((r) => setTimeout(r, 200));
          }
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, lane));
  }
  const t0 = performance.now();
  await fill('example.com');
  const writeReviews = reviews.splice(0);
  await fill('none.example.com');
  console.error(
    `bench/conversion: created 2 × ${objects} CronTabs in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );

  async function list(group) {
    const start = performance.now();
    const l = await kube.list(`/apis/${group}/v1/namespaces/bench/crontabs`);
    const ms = performance.now() - start;
    if (l.items.length !== objects || l.items[0].apiVersion !== `${group}/v1`)
      throw new Error(`${group}: listed ${l.items.length} objects`);
    if (group === 'example.com' && l.items[0].time !== '02:00') throw new Error('time was lost');
    return ms;
  }
  // Warm up both (connections, cache, JIT), then alternate.
  for (let i = 0; i < 3; i++) await Promise.all([list('example.com'), list('none.example.com')]);
  reviews.length = 0;
  const times = { webhook: [], none: [] };
  for (let i = 0; i < runs; i++) {
    times.webhook.push(await list('example.com'));
    times.none.push(await list('none.example.com'));
  }

  console.log(
    `\n${watchCache ? 'with the watch cache (default)' : 'kube-apiserver --watch-cache=false: every LIST reads etcd'}`,
  );
  console.log(row('LIST v1, conversion webhook (annex)', times.webhook, objects));
  console.log(row('LIST v1, strategy None', times.none, objects));
  console.log(
    row(
      'webhook − None (each run pair)',
      times.webhook.map((t, i) => t - times.none[i]),
      objects,
    ),
  );
  const sizes = [...new Set(reviews.map((r) => r.objects))];
  if (reviews.length)
    console.log(
      row(
        `annex per ConversionReview (${reviews.length}, ${sizes.join('/')} objects)`,
        reviews.map((r) => r.ms),
        sizes[0],
      ),
    );
  else
    console.log(
      `ConversionReviews during the ${runs} LISTs: none (served from the converted v1 cache)`,
    );
  const sizesW = [...new Set(writeReviews.map((r) => r.objects))];
  if (writeReviews.length)
    console.log(
      row(
        `annex per review while creating (${writeReviews.length}, ${sizesW.join('/')} obj)`,
        writeReviews.map((r) => r.ms),
        sizesW[0] ?? 1,
      ),
    );
  const failed = [...reviews, ...writeReviews].filter((r) => r.result !== 'success').length;
  if (failed) console.log(`failed reviews: ${failed}`);

  kube.close();
  await annex.close();
  await cp.stop();
  rmSync(certs, { recursive: true, force: true });
}

console.log(
  `CRD conversion: ${objects} CronTabs stored as v1beta1, listed through v1 (one unpaged LIST at a time), ${runs} runs each`,
);
await phase(true);
await phase(false);
