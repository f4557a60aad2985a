// Reference C of the webhook bench (issue 13): Pepr's own admission server running the two
// bench rules, written as a Pepr module (Capability + When(a.Deployment)...Validate/Mutate)
// and started through PeprModule, which builds Pepr's Controller: its express app, its
// https.createServer, its /validate/:path and /mutate/:path handlers, its processors,
// pino logging and prom-client metrics — all as shipped.
//
// What needs a cluster, and what stands in for it (see README.md beside this file):
// - Pepr binds its admission endpoints only once its PeprStore (a custom resource in
//   pepr-system) has been read and watched through kubernetes-fluent-client. A tiny
//   in-process API stub (startStoreApi below, HTTPS on 127.0.0.1, named
//   by a temporary kubeconfig) answers those few store calls; it sees no traffic during
//   the bench.
// - The API server would call Pepr at /validate/<api path>; the bench calls /validate, so
//   the https.createServer wrapper appends the api path (and binds 127.0.0.1, and sets the
//   bench's ≥ 95 s keep-alive timeout; Pepr leaves Node's 5 s default).
// - Pepr's pino log lines (three to five per review) are written as shipped, to /dev/null
//   (or BENCH_LOG) rather than the stdout that carries the `ready` line.
//
// Usage: node server.mjs <pepr install dir>   (env BENCH_PORT, BENCH_CERT, BENCH_KEY)
import { execFileSync } from 'node:child_process';
import https from 'node:https';
import { createRequire } from 'node:module';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';

const [peprDir] = process.argv.slice(2);
if (!peprDir) {
  console.error('usage: node server.mjs <pepr install dir>');
  process.exit(2);
}
const port = Number(process.env.BENCH_PORT);

// pino's default destination is `process.stdout.fd`; point it elsewhere before Pepr loads.
Object.defineProperty(process.stdout, 'fd', {
  value: openSync(process.env.BENCH_LOG || '/dev/null', 'a'),
});

const uuid = randomUUID();
const apiPath = randomBytes(16).toString('hex');
const kubeDir = mkdtempSync(join(tmpdir(), 'pepr-bench-'));
process.on('exit', () => rmSync(kubeDir, { recursive: true, force: true }));
const storeApi = await startStoreApi(`pepr-${uuid}`, kubeDir);
writeFileSync(
  join(kubeDir, 'config'),
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'stub',
        cluster: { server: storeApi, 'certificate-authority': join(kubeDir, 'stub.crt') },
      },
    ],
    users: [{ name: 'stub', user: {} }],
    contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'stub' } }],
    'current-context': 'stub',
  }),
);
Object.assign(process.env, {
  KUBECONFIG: join(kubeDir, 'config'),
  PEPR_API_PATH: apiPath,
  SSL_CERT_PATH: process.env.BENCH_CERT,
  SSL_KEY_PATH: process.env.BENCH_KEY,
});
wrapCreateServer(apiPath);

const { Capability, PeprModule, a } = createRequire(join(peprDir, 'package.json'))('pepr');
const bench = new Capability({
  name: 'bench',
  description: 'The two rules of the annex webhook bench',
  namespaces: [],
});
// Same rule as the other servers: ≤ 63 chars of [a-z0-9-], alphanumeric at both ends.
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
bench
  .When(a.Deployment)
  .IsCreatedOrUpdated()
  .Mutate((req) => {
    req.SetLabel('bench.annex.dev/mutated', 'true');
    for (const container of req.Raw.spec?.template?.spec?.containers ?? []) {
      if (!container.resources?.requests) {
        container.resources = {
          ...container.resources,
          requests: { cpu: '100m', memory: '128Mi' },
        };
      }
    }
  })
  .Validate((req) => {
    const name = req.Raw.metadata?.name ?? '';
    if (name.length <= 63 && dns1123Label.test(name)) return req.Approve();
    return req.Deny(
      `metadata.name: Invalid value: ${JSON.stringify(name)}: must be a DNS-1123 label ` +
        `(at most 63 lowercase alphanumerics or '-', alphanumeric at both ends)`,
      422,
    );
  });

const pkg = {
  description: 'annex webhook bench',
  pepr: { uuid, onError: 'ignore', webhookTimeout: 10, alwaysIgnore: { namespaces: [] } },
};
new PeprModule(pkg, [bench], { deferStart: true }).start(port);
await waitHealthy(port);
console.log('ready');

/** https.createServer as Pepr calls it, plus the bench's path, address and keep-alive. */
function wrapCreateServer(path) {
  const original = https.createServer;
  https.createServer = (options, app) => {
    const server = original(options, (req, res) => {
      if (req.url === '/validate' || req.url === '/mutate') req.url += `/${path}`;
      else if (req.url.startsWith('/validate?') || req.url.startsWith('/mutate?'))
        req.url = req.url.replace('?', `/${path}?`);
      app(req, res);
    });
    server.keepAliveTimeout = 100_000;
    const listen = server.listen.bind(server);
    server.listen = (p) => listen(p, '127.0.0.1');
    return server;
  };
}

/**
 * The only API calls Pepr makes before serving admissions: GET, PATCH, list and watch of
 * its PeprStore objects (`<name>-store`, `<name>-schedule`) in pepr-system.
 */
async function startStoreApi(prefix, dir) {
  const store = (name) => ({
    apiVersion: 'pepr.dev/v1',
    kind: 'PeprStore',
    metadata: {
      name,
      namespace: 'pepr-system',
      uid: `${name}-uid`,
      resourceVersion: '1',
      labels: { 'pepr.dev-cacheID': '0' },
    },
    data: { __pepr_do_not_delete__: 'k-thx-bye' },
  });
  const base = '/apis/pepr.dev/v1/namespaces/pepr-system/peprstores';
  // kubernetes-fluent-client ignores insecure-skip-tls-verify and refuses plain HTTP: the
  // stub gets its own self-signed certificate, trusted by the kubeconfig.
  const [crt, key] = [join(dir, 'stub.crt'), join(dir, 'stub.key')];
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      crt,
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const tls = { cert: readFileSync(crt), key: readFileSync(key) };
  const server = https.createServer(tls, (req, res) => {
    const url = new URL(req.url, 'http://stub');
    const send = (code, body) =>
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    req.resume();
    if (url.pathname.startsWith(`${base}/${prefix}-`)) {
      return send(200, store(url.pathname.slice(base.length + 1)));
    }
    if (url.pathname === base) {
      const name =
        url.searchParams.get('fieldSelector')?.replace('metadata.name=', '') ?? `${prefix}-store`;
      if (url.searchParams.get('watch') === 'true') {
        // An idle watch: the list already delivered the store.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.flushHeaders();
        return;
      }
      return send(200, {
        apiVersion: 'pepr.dev/v1',
        kind: 'PeprStoreList',
        metadata: { resourceVersion: '1' },
        items: [store(name)],
      });
    }
    send(404, {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.unref();
  return `https://127.0.0.1:${server.address().port}`;
}

/** Pepr binds /healthz together with the admission paths, once its store is ready. */
async function waitHealthy(p) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await new Promise((resolve) => {
      https
        .get(
          { host: '127.0.0.1', port: p, path: '/healthz', rejectUnauthorized: false, agent: false },
          (res) => {
            res.resume();
            resolve(res.statusCode === 200);
          },
        )
        .on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > deadline) {
      console.error('pepr: the admission endpoints were not bound within 30 s');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
