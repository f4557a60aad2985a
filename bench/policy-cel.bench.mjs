// Admission latency of one matching policy enforced natively (the ValidatingAdmissionPolicy
// compileToCel generates) vs through annex's webhook (the same policy, evaluate()), vs no
// policy, through a real kube-apiserver v1.37.2 on loopback, in the same run: server
// dry-run creates of an allowed Deployment, one at a time, the three cases interleaved
// (each in its own namespace, so drift on this noisy machine hits all three alike).
// Usage: npm run build && node bench/policy-cel.bench.mjs   (BENCH_REQUESTS, default 400 each)
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { allow } from '../dist/admission/verdict.js';
import { validatingWebhook } from '../dist/admission/webhook.js';
import { loadConfig } from '../dist/config/load.js';
import { ensureBinaries, pinnedVersions } from '../dist/devcluster/binaries.js';
import { ControlPlane } from '../dist/devcluster/control-plane.js';
import * as wire from '../dist/devcluster/wire.js';
import { createLogger } from '../dist/log.js';
import { webhookConfiguration } from '../dist/manifests/render.js';
import { compileToCel } from '../dist/policy/cel/index.js';
import { compilePolicy } from '../dist/policy/compile.js';
import { evaluate } from '../dist/policy/evaluate.js';
import { startAnnex } from '../dist/server/start.js';

const N = Number(process.env.BENCH_REQUESTS ?? 400);
const here = import.meta.dirname;
const run = promisify(execFile);

const bins = ensureBinaries();
if ('missing' in bins) throw new Error(bins.missing);
const cp = new ControlPlane(bins.binDir, pinnedVersions().kubernetes);
const info = await cp.start((l) => console.error(l));
const kubectl = async (args, input) => {
  const p = run(info.kubectl, ['--kubeconfig', info.adminKubeconfig, ...args], {
    maxBuffer: 64 << 20,
  });
  if (input !== undefined) p.child.stdin.end(input);
  return (await p).stdout;
};
const user = parse(readFileSync(info.adminKubeconfig, 'utf8')).users[0].user;
const agent = new Agent({
  keepAlive: true,
  maxSockets: 1,
  ca: readFileSync(info.servingCaFile),
  cert: Buffer.from(user['client-certificate-data'], 'base64'),
  key: Buffer.from(user['client-key-data'], 'base64'),
});
function post(path, body) {
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${info.server}${path}`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', accept: 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const certsDir = mkdtempSync(join(tmpdir(), 'annex-bench-certs-'));
let annex;
try {
  const ns = { none: 'bench-none', vap: 'bench-vap', webhook: 'bench-webhook' };
  for (const n of Object.values(ns)) await kubectl(['create', 'namespace', n]);
  const source = parse(readFileSync(join(here, '..', 'policies', 'workload-names.yaml'), 'utf8'));
  const scoped = (n) =>
    compilePolicy({
      ...source,
      spec: { ...source.spec, match: { ...source.spec.match, namespaces: [n] } },
    });

  // Native: the generated VAP + binding, confined to its namespace.
  const cel = compileToCel(scoped(ns.vap));
  if ('reason' in cel) throw new Error(cel.reason);
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [cel.vap, cel.binding] }),
  );

  // Webhook: annex serving the same policy through evaluate(), registered for its namespace.
  const policy = scoped(ns.webhook);
  const webhook = validatingWebhook({
    name: 'bench-policy.annex.dev',
    match: { kinds: policy.source.spec.match.kinds, operations: ['CREATE'] },
    admit: (req) => {
      const e = evaluate([policy], req);
      return e.allowed ? allow(e.warnings) : { allowed: false, status: e.status };
    },
  });
  const config = loadConfig({
    overrides: {
      server: { host: '127.0.0.1', port: 0 },
      tls: { dir: certsDir, service: wire.ANNEX_SERVICE, namespace: wire.ANNEX_NAMESPACE },
      kube: { kubeconfig: info.adminKubeconfig },
      metrics: { enabled: false },
      log: { level: 'silent' },
    },
  });
  annex = await startAnnex(config, createLogger('silent'), [
    { name: 'bench-policy', webhooks: [webhook] },
  ]);
  await wire.ensureAnnexService(kubectl);
  const caBundle = readFileSync(join(certsDir, 'ca.crt')).toString('base64');
  const vwc = webhookConfiguration(webhook, {
    name: wire.ANNEX_SERVICE,
    namespace: wire.ANNEX_NAMESPACE,
    port: 443,
  });
  vwc.webhooks[0].namespaceSelector = {
    matchLabels: { 'kubernetes.io/metadata.name': ns.webhook },
  };
  await wire.applyObjects(kubectl, wire.pointAtLocalAnnex([vwc], annex.port, caBundle));

  const deployment = (name, n) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: n, labels: { app: 'web' } },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
      },
    },
  });
  const create = (n, name) =>
    post(`/apis/apps/v1/namespaces/${n}/deployments?dryRun=All`, deployment(name, n));

  // Both enforce before measuring: a dotted name is refused in each policy's namespace.
  for (const n of [ns.vap, ns.webhook]) {
    for (let t = Date.now(); (await create(n, 'web.front')) === 201;) {
      if (Date.now() - t > 30_000) throw new Error(`${n}: policy not enforced`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  if ((await create(ns.none, 'web.front')) !== 201) throw new Error('no-policy namespace refuses');

  const times = { none: [], vap: [], webhook: [] };
  for (let i = 0; i < 50; i++) for (const n of Object.values(ns)) await create(n, `warm-${i}`);
  for (let i = 0; i < N; i++) {
    for (const [k, n] of Object.entries(ns)) {
      const t0 = process.hrtime.bigint();
      const code = await create(n, `web-${i}`);
      times[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (code !== 201) throw new Error(`${k}: HTTP ${code}`);
    }
  }
  const pct = (xs, p) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
  const row = (k) => ({ p50: pct(times[k], 50), p99: pct(times[k], 99) });
  const base = row('none');
  console.log(
    `Deployment dry-run create, one matching policy (workload-names), ${N} each, interleaved:`,
  );
  for (const k of ['none', 'vap', 'webhook']) {
    const r = row(k);
    console.log(
      `  ${k.padEnd(8)} p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms` +
        (k === 'none' ? '' : `  (p50 +${(r.p50 - base.p50).toFixed(2)} ms over no policy)`),
    );
  }
  const v = row('vap');
  const w = row('webhook');
  console.log(
    `  webhook / VAP: p50 ×${(w.p50 / v.p50).toFixed(2)}, p99 ×${(w.p99 / v.p99).toFixed(2)}`,
  );
} finally {
  await annex?.close();
  agent.destroy();
  await cp.stop();
  rmSync(certsDir, { recursive: true, force: true });
}
