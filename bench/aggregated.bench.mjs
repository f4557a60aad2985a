// Aggregated API cost, in one run against a real etcd + kube-apiserver on loopback:
//   1. LIST of 10,000 PodMetrics straight to annex (HTTPS, front-proxy certificate),
//   2. the same LIST through the kube-apiserver's aggregation layer (proxied over HTTP/2),
//   3. the kube-apiserver's own LIST of 10,000 ConfigMaps, the reference for the ratios;
// latency p50/p99 per request and server CPU per request (utime+stime of each process from
// /proc), then memory per scraped node (MetricsStore heap with N nodes × 30 pods).
//
//   npm run build && node bench/aggregated.bench.mjs [pods=10000] [runs=50]
//
// annex runs as a child process (this file, mode "server") from dist/, with the local
// source at a one-day interval: the 10,000 pods are synthetic batches stored into its
// MetricsStore, so the listing, serving and auth code is annex's own. The control plane is
// the one the tests use (dist/devcluster; binaries cached by test/cluster/build.sh).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const repo = join(here, '..');
const dist = new URL('../dist/', import.meta.url);
const [mode] = process.argv.slice(2);

/** A batch of `pods` PodMetrics (2 containers each) spread over `nodes` nodes. */
function batch(pods, nodes, tsNs, cpuNs) {
  const startNs = tsNs - 3_600_000_000_000n;
  const point = (cpu, memory) => ({ startNs, tsNs, cpuNs: cpu, memory });
  return {
    nodes: Array.from({ length: nodes }, (_, i) => ({
      name: `node-${i}`,
      labels: { 'kubernetes.io/hostname': `node-${i}` },
      point: point(cpuNs * 40n, 4 * 2 ** 30),
    })),
    pods: Array.from({ length: pods }, (_, i) => ({
      namespace: `ns-${i % 100}`,
      name: `pod-${String(i).padStart(5, '0')}`,
      labels: { app: `app-${i % 50}` },
      containers: new Map([
        ['main', point(cpuNs + BigInt(i), 100 * 2 ** 20 + i * 4096)],
        ['sidecar', point(cpuNs / 4n, 20 * 2 ** 20)],
      ]),
    })),
  };
}

/** Two batches 15 s apart make every rate (the store needs two points). */
function fill(store, pods, nodes) {
  const now = BigInt(Date.now()) * 1_000_000n;
  store.store(batch(pods, nodes, now - 15_000_000_000n, 1_000_000_000_000n));
  store.store(batch(pods, nodes, now, 1_003_750_000_000n));
}

// ---- mode "server": annex from dist/, filled with synthetic pods ------------------------
async function server() {
  const [kubeconfig, certsDir, pods] = process.argv.slice(3);
  const { loadConfig } = await import(new URL('config/load.js', dist).href);
  const { createLogger } = await import(new URL('log.js', dist).href);
  const { startAnnex } = await import(new URL('server/start.js', dist).href);
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      tls: { dir: certsDir, service: 'annex', namespace: 'annex-system' },
      kube: { kubeconfig },
      metrics: { source: 'local', scrapeIntervalSeconds: 86_400 },
      log: { level: 'warn' },
    },
  });
  const annex = await startAnnex(config, createLogger('warn'));
  // The local source samples at once and after 1 s; after that it is quiet for a day.
  await new Promise((r) => setTimeout(r, 1500));
  fill(annex.metrics.pipeline.store, Number(pods), 100);
  process.stdout.write(`${JSON.stringify({ port: annex.port })}\n`);
  process.once('SIGTERM', () => void annex.close().then(() => process.exit(0)));
}

// ---- mode "memory": heap per scraped node ----------------------------------------------
async function memory() {
  const { MetricsStore } = await import(new URL('metrics/index.js', dist).href);
  const gcHeap = () => {
    global.gc();
    global.gc();
    return process.memoryUsage().heapUsed;
  };
  const rows = [];
  for (const nodes of [100, 1000]) {
    const before = gcHeap();
    const store = new MetricsStore({ resolutionMs: 15_000 });
    fill(store, nodes * 30, nodes);
    // A served list, as the API hands it out (snapshot objects are cached per second).
    await store.pods.snapshot();
    const after = gcHeap();
    rows.push({ nodes, pods: nodes * 30, bytes: after - before });
    if (store.counts().pods !== nodes * 30) throw new Error('store did not keep every pod');
  }
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

// ---- default mode: the comparison ------------------------------------------------------
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** utime + stime of a process, in ms. */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

function rssMiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function get(url, opts) {
  if (opts.session) return getH2(opts.session, new URL(url), opts.headers);
  return new Promise((resolve, reject) => {
    const req = request(url, { ...opts, method: opts.method ?? 'GET' }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** GET on an open HTTP/2 session, as the aggregator proxies. */
function getH2(session, url, headers) {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': url.pathname + url.search, ...headers });
    const chunks = [];
    let status = 0;
    stream.on('response', (h) => (status = h[':status']));
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
    stream.end();
  });
}

const quantile = (sorted, q) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

/**
 * Runs the targets in interleaved rounds (so background work such as etcd compaction or GC
 * spreads over all of them), timing each request and charging each process's CPU to it.
 */
async function measure(targets, pids, runs, expectItems) {
  for (const t of targets) {
    for (let i = 0; i < 3; i++) {
      const r = await get(t.url, t.opts);
      if (r.status !== 200)
        throw new Error(`${t.name}: ${r.status} ${r.body.toString().slice(0, 300)}`);
      const n = JSON.parse(r.body).items.length;
      if (n !== expectItems) throw new Error(`${t.name}: ${n} items, expected ${expectItems}`);
    }
  }
  const acc = targets.map((t) => ({ name: t.name, times: [], cpu: pids.map(() => 0), bytes: 0 }));
  for (let i = 0; i < runs; i++) {
    for (const [j, t] of targets.entries()) {
      const cpu0 = pids.map(cpuMs);
      const t0 = performance.now();
      const r = await get(t.url, t.opts);
      acc[j].times.push(performance.now() - t0);
      pids.forEach((p, k) => (acc[j].cpu[k] += cpuMs(p) - cpu0[k]));
      acc[j].bytes = r.body.length;
    }
  }
  return acc.map((a) => {
    a.times.sort((x, y) => x - y);
    return {
      name: a.name,
      p50: quantile(a.times, 0.5),
      p99: quantile(a.times, 0.99),
      cpu: a.cpu.map((c) => c / runs),
      bytes: a.bytes,
    };
  });
}

async function main() {
  const pods = Number(process.argv[2] ?? 10_000);
  const runs = Number(process.argv[3] ?? 50);
  const { ensureBinaries, pinnedVersions } = await import(
    new URL('devcluster/binaries.js', dist).href
  );
  const { ControlPlane } = await import(new URL('devcluster/control-plane.js', dist).href);
  const bins = ensureBinaries();
  if ('missing' in bins) throw new Error(bins.missing);
  const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
  const certsDir = mkdtempSync(join(tmpdir(), 'annex-bench-certs-'));
  let child;
  try {
    const c = await cp.start((l) => console.error(l));
    // ControlPlane keeps its children private; the bench needs kube-apiserver's pid for /proc.
    const apiserverPid = cp.procs.find((p) => p.spawnfile.endsWith('kube-apiserver')).pid;
    const kubectl = (args, input) =>
      execFileSync(c.kubectl, ['--kubeconfig', c.adminKubeconfig, ...args], {
        input,
        maxBuffer: 64 << 20,
      }).toString();

    child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), 'server', c.adminKubeconfig, certsDir, String(pods)],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const { port } = await new Promise((resolve, reject) => {
      child.stdout.once('data', (d) => resolve(JSON.parse(d.toString())));
      child.once('exit', (code) => reject(new Error(`annex exited (${code})`)));
    });
    const caBundle = readFileSync(join(certsDir, 'ca.crt'));

    // Service + APIService as the tests do (ExternalName → localhost, repo YAML).
    const svc = readFileSync(join(repo, 'apiservice/apiservice.yaml'), 'utf8')
      .replace(/port: \d+/, `port: ${port}`)
      .concat(`  caBundle: ${caBundle.toString('base64')}\n`);
    kubectl(
      ['apply', '-f', '-'],
      `apiVersion: v1
kind: Namespace
metadata: {name: annex-system}
---
apiVersion: v1
kind: Service
metadata: {name: annex, namespace: annex-system}
spec: {type: ExternalName, externalName: localhost}
---
${svc}`,
    );
    kubectl([
      'wait',
      '--for=condition=Available',
      'apiservice/v1beta1.metrics.annex.dev',
      '--timeout=60s',
    ]);

    const admin = {
      ca: readFileSync(c.servingCaFile),
      cert: readFileSync(join(c.dir, 'admin.crt')),
      key: readFileSync(join(c.dir, 'admin.key')),
      agent: new Agent({ keepAlive: true, maxSockets: 16 }),
      headers: { accept: 'application/json' },
    };

    // 10,000 ConfigMaps about the size of a PodMetrics, 16 requests in flight.
    kubectl(['create', 'namespace', 'bench']);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < pods) {
          const i = next++;
          const body = JSON.stringify({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: `cm-${String(i).padStart(5, '0')}`,
              labels: { app: `app-${i % 50}` },
            },
            data: { cpu: `${250_000_000 + i}n`, memory: `${102_400 + i * 4}Ki`, window: '15s' },
          });
          const r = await get(`${c.server}/api/v1/namespaces/bench/configmaps`, {
            ...admin,
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body,
          });
          if (r.status !== 201) throw new Error(`create configmap: ${r.status} ${r.body}`);
        }
      }),
    );
    console.error(
      `created ${pods} ConfigMaps in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );

    const single = { ...admin, agent: new Agent({ keepAlive: true, maxSockets: 1 }) };
    const direct = {
      ca: caBundle,
      servername: 'annex.annex-system.svc',
      cert: readFileSync(c.frontProxyClientCert),
      key: readFileSync(c.frontProxyClientKey),
      agent: new Agent({ keepAlive: true, maxSockets: 1 }),
      // What the aggregator sends for an admin (system:masters needs no SubjectAccessReview).
      headers: {
        accept: 'application/json',
        'x-remote-user': 'bench',
        'x-remote-group': 'system:masters',
      },
    };
    const h2 = http2.connect(`https://127.0.0.1:${port}`, {
      ca: direct.ca,
      servername: direct.servername,
      cert: direct.cert,
      key: direct.key,
    });
    const directH2 = { session: h2, headers: direct.headers };
    const pids = [child.pid, apiserverPid];
    const path = '/apis/metrics.annex.dev/v1beta1/pods';
    const results = await measure(
      [
        {
          name: 'PodMetrics, direct to annex (HTTP/1.1)',
          url: `https://127.0.0.1:${port}${path}`,
          opts: direct,
        },
        {
          name: 'PodMetrics, direct to annex (HTTP/2)',
          url: `https://127.0.0.1:${port}${path}`,
          opts: directH2,
        },
        { name: 'PodMetrics, through kube-apiserver', url: `${c.server}${path}`, opts: single },
        {
          name: 'ConfigMaps, kube-apiserver itself',
          url: `${c.server}/api/v1/namespaces/bench/configmaps`,
          opts: single,
        },
      ],
      pids,
      runs,
      pods,
    );
    const annexRss = rssMiB(child.pid);
    h2.close();

    const mem = JSON.parse(
      execFileSync(process.execPath, [
        '--expose-gc',
        fileURLToPath(import.meta.url),
        'memory',
      ]).toString(),
    );

    const ref = results[results.length - 1];
    const f = (x) => x.toFixed(1);
    console.log(
      `\nLIST of ${pods} objects, ${runs} requests each, interleaved (kubernetes v${c.version}, Node ${process.version})\n`,
    );
    console.log(
      '| request | p50 ms | p99 ms | annex CPU ms/req | kube-apiserver CPU ms/req | response MB | p50 vs ConfigMaps |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const r of results) {
      console.log(
        `| ${r.name} | ${f(r.p50)} | ${f(r.p99)} | ${f(r.cpu[0])} | ${f(r.cpu[1])} | ${(r.bytes / 2 ** 20).toFixed(2)} | ${(r.p50 / ref.p50).toFixed(2)}× |`,
      );
    }
    console.log(`\nannex RSS with ${pods} pods in 100 nodes: ${f(annexRss)} MiB`);
    console.log('\n| nodes (30 pods each, 2 containers) | store heap MiB | KiB per node |');
    console.log('|---:|---:|---:|');
    for (const m of mem) {
      console.log(`| ${m.nodes} | ${f(m.bytes / 2 ** 20)} | ${f(m.bytes / m.nodes / 1024)} |`);
    }
  } finally {
    child?.kill('SIGTERM');
    await cp.stop();
    rmSync(certsDir, { recursive: true, force: true });
  }
}

if (mode === 'server') await server();
else if (mode === 'memory') await memory();
else await main();
