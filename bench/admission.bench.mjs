// Admission webhook benchmark: server CPU per review and client-side p50/p99 latency
// for 5, 10 and 50 KB AdmissionReviews over keep-alive HTTPS, for annex's validating
// and mutating webhooks, beside a bare node:https server that only parses and
// stringifies the same JSON, measured in the same run (the ratio is what to read:
// this machine is noisy). Usage: npm run build && node bench/admission.bench.mjs
import { fork } from 'node:child_process';
import { Agent, request } from 'node:https';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCertificates } from '../dist/certs/index.js';

const here = import.meta.dirname;
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1500);
const SIZES_KB = [5, 10, 50];

function review(targetBytes, i) {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `web-${i}`, namespace: 'bench', labels: { app: 'web' }, annotations: {} },
    spec: {
      containers: [{ name: 'web', image: 'nginx:1.27', env: [] }],
      restartPolicy: 'Always',
      serviceAccountName: 'default',
    },
  };
  const base = () =>
    JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
        kind: { group: '', version: 'v1', kind: 'Pod' },
        resource: { group: '', version: 'v1', resource: 'pods' },
        namespace: 'bench',
        operation: 'CREATE',
        userInfo: { username: 'bench' },
        object: pod,
        dryRun: false,
      },
    });
  // Pad with realistic content: environment variables, as large pod specs have.
  let n = 0;
  while (base().length < targetBytes) {
    pod.spec.containers[0].env.push({ name: `VAR_${n}`, value: `value-${n}-${'x'.repeat(40)}` });
    n++;
  }
  return base();
}

async function startServer(kind, certsDir) {
  const child = fork(join(here, 'admission-server.mjs'), [kind, certsDir], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const { port } = await new Promise((r) => child.once('message', r));
  const cpu = () =>
    new Promise((r) => {
      child.once('message', (m) => r(m.cpuMicros));
      child.send('cpu');
    });
  return { port, cpu, stop: () => child.kill() };
}

function post(agent, ca, port, path, body) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent,
        ca,
        servername: 'localhost',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(Number(process.hrtime.bigint() - t0) / 1e6)
            : reject(new Error(`HTTP ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const pct = (xs, p) =>
  xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

async function measure(server, ca, path, bodies) {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  for (let i = 0; i < 200; i++) await post(agent, ca, server.port, path, bodies[i % bodies.length]); // warm-up
  const cpu0 = await server.cpu();
  const lat = [];
  // 4 concurrent keep-alive connections, as the API server's pool would use.
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < REQUESTS) {
        const i = next++;
        lat.push(await post(agent, ca, server.port, path, bodies[i % bodies.length]));
      }
    }),
  );
  const cpu = (await server.cpu()) - cpu0;
  agent.destroy();
  return { cpuPerReqUs: cpu / REQUESTS, p50: pct(lat, 50), p99: pct(lat, 99) };
}

const dir = mkdtempSync(join(tmpdir(), 'annex-bench-'));
try {
  await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  const ca = readFileSync(join(dir, 'ca.crt'));
  const bare = await startServer('bare', dir);
  const annex = await startServer('annex', dir);
  const rows = [];
  for (const kb of SIZES_KB) {
    const bodies = Array.from({ length: 16 }, (_, i) => review(kb * 1024, i));
    const b = await measure(bare, ca, '/', bodies);
    const v = await measure(annex, ca, '/validate/names', bodies);
    const m = await measure(annex, ca, '/mutate/defaults', bodies);
    rows.push({ kb, b, v, m });
  }
  bare.stop();
  annex.stop();
  const f = (x) => x.toFixed(2);
  console.log(
    `admission webhooks: ${REQUESTS} reviews per cell, 4 keep-alive connections, loopback`,
  );
  console.log(
    'size | bare CPU/req | validate CPU/req (ratio) | mutate CPU/req (ratio) | bare p50/p99 | validate p50/p99 | mutate p50/p99',
  );
  for (const { kb, b, v, m } of rows) {
    console.log(
      `${kb} KB | ${f(b.cpuPerReqUs)} µs | ${f(v.cpuPerReqUs)} µs (${f(v.cpuPerReqUs / b.cpuPerReqUs)}x) | ${f(m.cpuPerReqUs)} µs (${f(m.cpuPerReqUs / b.cpuPerReqUs)}x) | ${f(b.p50)}/${f(b.p99)} ms | ${f(v.p50)}/${f(v.p99)} ms | ${f(m.p50)}/${f(m.p99)} ms`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
