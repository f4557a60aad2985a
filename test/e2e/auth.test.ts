// Delegated authentication and authorization against the real kube-apiserver: annex runs
// as a ServiceAccount with exactly the RBAC an aggregated API server gets
// (system:auth-delegator + extension-apiserver-authentication-reader), reads the
// front-proxy trust from kube-system, and asks TokenReview / SubjectAccessReview.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import Koa from 'koa';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { delegatedAuth, type DelegatedAuth } from '../../src/apiserver/auth/index.js';
import { authorize, REVIEW_FAILED_REASON } from '../../src/apiserver/auth/authorize.js';
import { AccessReviewer } from '../../src/apiserver/auth/subject-access-review.js';
import { requestInfoMiddleware } from '../../src/apiserver/request-info.js';
import { CLIENT_EXT, opensslCa, opensslLeaf, opensslSelfSigned } from '../../src/devcluster/pki.js';
import { KubeClient } from '../../src/kube/client.js';
import { loadKubeconfig } from '../../src/kube/kubeconfig.js';
import { statusErrors } from '../../src/server/errors.js';
import { listen, type Listening } from '../../src/server/listen.js';
import { createNamespace, describeCluster, kubectl, kubectlOk } from '../cluster/harness.js';

const GROUP = 'metrics.annex.dev';
const TTL_MS = 10_000; // the delegating default, for TokenReview and SubjectAccessReview alike

interface Reply {
  status: number;
  body: {
    user?: { name: string; groups: string[]; extra: Record<string, string[]> };
    message?: string;
    reason?: string;
    code?: number;
  };
}

describeCluster('delegated authn/authz', (c) => {
  const tmp = mkdtempSync(join(tmpdir(), 'annex-auth-e2e-'));
  const logLines: string[] = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(chunk, _enc, cb) {
        logLines.push(String(chunk));
        cb();
      },
    }),
  );
  let ns: string;
  let saToken: string;
  let annexToken: string;
  let auth: DelegatedAuth;
  let server: Listening;
  let brokenServer: Listening;
  const clients: KubeClient[] = [];
  const rand = randomBytes(3).toString('hex');
  const cleanup: string[][] = [];
  const file = (f: string) => readFileSync(f);

  function tokenKubeconfig(name: string, token: string): string {
    writeFileSync(join(tmp, `${name}.token`), token);
    const path = join(tmp, `${name}.kubeconfig`);
    writeFileSync(
      path,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': name,
        contexts: [{ name, context: { cluster: 'test', user: name } }],
        clusters: [
          { name: 'test', cluster: { server: c.server, 'certificate-authority': c.servingCaFile } },
        ],
        users: [{ name, user: { tokenFile: `${name}.token` } }],
      }),
    );
    return path;
  }

  function app(features: import('koa').Middleware[]) {
    const handler: import('koa').Middleware = (ctx) => {
      ctx.body = { user: ctx.state.user };
    };
    // The server's own first layers, then the auth middleware under test, then an echo.
    const koa = new Koa();
    koa.silent = true;
    for (const m of [statusErrors(log), requestInfoMiddleware(), ...features, handler]) koa.use(m);
    return koa;
  }

  beforeAll(async () => {
    const serving = opensslSelfSigned(tmp, 'serving', {
      cn: 'localhost',
      sans: ['DNS:localhost', 'IP:127.0.0.1'],
    });
    ns = await createNamespace('auth');
    saToken = (await kubectlOk(['create', 'token', 'default', '-n', ns])).trim();

    // annex's own identity, with the RBAC the manifests give it.
    await kubectlOk(['create', 'serviceaccount', 'annex', '-n', ns]);
    const crb = `annex-e2e-${ns}:system:auth-delegator`;
    const rb = `annex-e2e-${ns}-auth-reader`;
    await kubectlOk([
      'create',
      'clusterrolebinding',
      crb,
      '--clusterrole=system:auth-delegator',
      `--serviceaccount=${ns}:annex`,
    ]);
    await kubectlOk([
      'create',
      'rolebinding',
      rb,
      '-n',
      'kube-system',
      '--role=extension-apiserver-authentication-reader',
      `--serviceaccount=${ns}:annex`,
    ]);
    cleanup.push(
      ['delete', 'clusterrolebinding', crb],
      ['delete', 'rolebinding', rb, '-n', 'kube-system'],
    );
    annexToken = (await kubectlOk(['create', 'token', 'annex', '-n', ns, '--duration=1h'])).trim();
    const annexClient = new KubeClient(loadKubeconfig(tokenKubeconfig('annex', annexToken)));
    clients.push(annexClient);

    auth = delegatedAuth({ client: annexClient, log });
    await auth.start();
    const tls = {
      cert: serving.cert,
      key: serving.key,
      clientCAs: auth.config.clientCAs(),
    };
    server = await listen(app([auth.authenticate, auth.authorize]), {
      host: '127.0.0.1',
      port: 0,
      keepAliveTimeoutSeconds: 5,
      tls,
    });
    auth.config.onChange(() => server.updateTls({ ...tls, clientCAs: auth.config.clientCAs() }));

    // The same authentication, but authorization asked by an identity that may not create
    // SubjectAccessReviews (annex without its auth-delegator binding).
    const jane = new KubeClient(loadKubeconfig(c.userKubeconfig));
    clients.push(jane);
    brokenServer = await listen(
      app([
        auth.authenticate,
        authorize({ reviewer: new AccessReviewer(jane, { retryInitialMs: 10 }), log }),
      ]),
      { host: '127.0.0.1', port: 0, keepAliveTimeoutSeconds: 5, tls },
    );
  });

  afterAll(async () => {
    auth?.stop();
    await server?.close();
    await brokenServer?.close();
    for (const k of clients) k.close();
    for (const args of cleanup) await kubectl([...args, '--ignore-not-found']);
    rmSync(tmp, { recursive: true, force: true });
  });

  const frontProxy = () => ({
    cert: file(c.frontProxyClientCert),
    key: file(c.frontProxyClientKey),
  });

  /** HTTP/1.1 request on a fresh connection (no identity leaks across tests). */
  function call(
    path: string,
    opts: {
      cert?: Buffer;
      key?: Buffer;
      headers?: Record<string, string | string[]>;
      on?: Listening;
    } = {},
  ): Promise<Reply> {
    const target = opts.on ?? server;
    return new Promise((resolve, reject) => {
      const req = request(
        `${target.url}${path}`,
        {
          ca: file(join(tmp, 'serving.crt')),
          cert: opts.cert,
          key: opts.key,
          agent: false,
          headers: opts.headers,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (body += d));
          res.on('end', () => {
            const json = String(res.headers['content-type']).startsWith('application/json');
            resolve({ status: res.statusCode ?? 0, body: json ? JSON.parse(body) : {} });
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** The same over HTTP/2, as the aggregator proxies. */
  function callH2(path: string, headers: Record<string, string | string[]>): Promise<Reply> {
    return new Promise((resolve, reject) => {
      const session = http2.connect(server.url, {
        ca: file(join(tmp, 'serving.crt')),
        ...frontProxy(),
      });
      session.on('error', reject);
      const stream = session.request({ ':path': path, ...headers });
      let body = '';
      let status = 0;
      stream.setEncoding('utf8');
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (d: string) => (body += d));
      stream.on('end', () => {
        session.close();
        resolve({ status, body: JSON.parse(body) });
      });
      stream.on('error', reject);
      stream.end();
    });
  }

  const podsPath = () => `/apis/${GROUP}/v1beta1/namespaces/${ns}/pods`;

  it('front proxy: 403 with the exact message, then 200 once RBAC allows (after the deny cache expires)', async () => {
    const user = `jane-${rand}`;
    const headers = {
      'X-Remote-User': user,
      'X-Remote-Group': 'system:authenticated',
      'X-Remote-Extra-Scopes': 'a',
    };
    const denied = await call(podsPath(), { ...frontProxy(), headers });
    const deniedAt = Date.now();
    expect(denied.status).toBe(403);
    expect(denied.body).toMatchObject({
      kind: 'Status',
      reason: 'Forbidden',
      code: 403,
      message: `pods.${GROUP} is forbidden: User "${user}" cannot list resource "pods" in API group "${GROUP}" in the namespace "${ns}"`,
      details: { group: GROUP, kind: 'pods' },
    });

    const role = `annex-e2e-pods-reader-${rand}`;
    await kubectlOk(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: role },
        rules: [{ apiGroups: [GROUP], resources: ['pods'], verbs: ['get', 'list'] }],
      }),
    });
    await kubectlOk([
      'create',
      'clusterrolebinding',
      role,
      `--clusterrole=${role}`,
      `--user=${user}`,
    ]);
    cleanup.push(['delete', 'clusterrolebinding', role], ['delete', 'clusterrole', role]);
    const grantedAt = Date.now();

    // Still denied from the cache right after the grant (RBAC itself already allows)…
    const reviews = auth.access.calls;
    expect((await call(podsPath(), { ...frontProxy(), headers })).status).toBe(403);
    expect(auth.access.calls).toBe(reviews);
    // …and allowed once the cached deny expired.
    let ok: Reply | undefined;
    while (Date.now() - grantedAt < TTL_MS + 15_000) {
      const r = await call(podsPath(), { ...frontProxy(), headers });
      if (r.status === 200) {
        ok = r;
        break;
      }
      await new Promise((res) => setTimeout(res, 250));
    }
    expect(ok?.body.user).toEqual({
      name: user,
      groups: ['system:authenticated'],
      extra: { scopes: ['a'] },
    });
    expect(Date.now() - deniedAt).toBeGreaterThanOrEqual(TTL_MS - 500);
  });

  it('front proxy over HTTP/2 with one X-Remote-Group header per group', async () => {
    const r = await callH2(`/apis/${GROUP}/v1beta1`, {
      'x-remote-user': 'system:kube-aggregator',
      'x-remote-group': ['system:masters', 'group, with comma'],
    });
    expect(r.status).toBe(200);
    expect(r.body.user?.groups).toEqual([
      'system:masters',
      'group, with comma',
      'system:authenticated',
    ]);
  });

  it('answers 401 to forged X-Remote-* headers without the front-proxy certificate', async () => {
    const r = await call(podsPath(), {
      headers: { 'X-Remote-User': 'admin', 'X-Remote-Group': 'system:masters' },
    });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Unauthorized',
      reason: 'Unauthorized',
      code: 401,
    });
  });

  it('ignores forged X-Remote-* behind every certificate that is not a valid front proxy, on every path', async () => {
    // Certificates that look like the front proxy's and are not: another CA's with the
    // allowed CN, the real front-proxy CA's with another CN, and with a server-only usage.
    const { copyFileSync } = await import('node:fs');
    const caDir = join(tmp, 'fake-proxies');
    (await import('node:fs')).mkdirSync(caDir, { recursive: true });
    copyFileSync(c.frontProxyCaFile, join(caDir, 'front-proxy-ca.crt'));
    copyFileSync(
      join(c.frontProxyCaFile, '..', 'front-proxy-ca.key'),
      join(caDir, 'front-proxy-ca.key'),
    );
    opensslCa(caDir, 'other-ca', 'front-proxy-ca');
    opensslLeaf(caDir, 'wrong-ca', 'other-ca', '/CN=front-proxy-client', CLIENT_EXT);
    opensslLeaf(caDir, 'wrong-cn', 'front-proxy-ca', '/CN=front-proxy-clients', CLIENT_EXT);
    opensslLeaf(caDir, 'server-only', 'front-proxy-ca', '/CN=front-proxy-client', [
      'extendedKeyUsage=serverAuth',
    ]);
    const headers = {
      'X-Remote-User': 'system:admin',
      'X-Remote-Group': ['system:masters', 'system:authenticated'],
      'X-Remote-Extra-Scopes': 'all',
    };
    const paths = [podsPath(), `/apis/${GROUP}/v1beta1`, '/apis', '/metrics', '/openapi/v2'];
    for (const name of ['wrong-ca', 'wrong-cn', 'server-only']) {
      const id = { cert: file(join(caDir, `${name}.crt`)), key: file(join(caDir, `${name}.key`)) };
      for (const path of paths) {
        const r = await call(path, { ...id, headers });
        expect({ name, path, status: r.status }).toEqual({ name, path, status: 401 });
      }
    }
  });

  it('ignores X-Remote-* behind a client-CA certificate: the user is the certificate CN', async () => {
    const r = await call(podsPath(), {
      cert: loadKubeconfig(c.userKubeconfig).cert,
      key: loadKubeconfig(c.userKubeconfig).key,
      headers: { 'X-Remote-User': 'annex-admin', 'X-Remote-Group': 'system:masters' },
    });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(
      `pods.${GROUP} is forbidden: User "jane" cannot list resource "pods" in API group "${GROUP}" in the namespace "${ns}"`,
    );
  });

  it('authenticates a ServiceAccount token by TokenReview; without RBAC annex says 403', async () => {
    const r = await call(podsPath(), { headers: { Authorization: `Bearer ${saToken}` } });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(
      `pods.${GROUP} is forbidden: User "system:serviceaccount:${ns}:default" cannot list resource "pods" in API group "${GROUP}" in the namespace "${ns}"`,
    );
    const bad = await call(podsPath(), {
      headers: { Authorization: `Bearer ${saToken.slice(0, -4)}AAAA` },
    });
    expect(bad.status).toBe(401);
  });

  it('allows the admin client certificate (O=system:masters) without asking', async () => {
    const kc = loadKubeconfig(c.adminKubeconfig);
    const r = await call(`/apis/${GROUP}/v1beta1/nodes`, { cert: kc.cert, key: kc.key });
    expect(r.status).toBe(200);
    expect(r.body.user).toEqual({
      name: 'annex-admin',
      groups: ['system:masters', 'system:authenticated'],
      extra: {},
    });
  });

  it('lets the availability probe through (system:kube-aggregator, system:masters)', async () => {
    const r = await call(`/apis/${GROUP}/v1beta1`, {
      ...frontProxy(),
      headers: { 'X-Remote-User': 'system:kube-aggregator', 'X-Remote-Group': 'system:masters' },
    });
    expect(r.status).toBe(200);
  });

  it('authorizes non-resource paths by SAR: discovery allowed to the authenticated, /metrics not', async () => {
    const headers = { 'X-Remote-User': `nobody-${rand}` };
    expect((await call('/openapi/v2', { ...frontProxy(), headers })).status).toBe(200);
    const r = await call('/metrics', { ...frontProxy(), headers });
    expect(r.status).toBe(403);
    expect(r.body.message).toBe(`forbidden: User "nobody-${rand}" cannot get path "/metrics"`);
  });

  it('serves probes without credentials', async () => {
    expect((await call('/readyz')).status).toBe(200);
  });

  it('refuses (500 as k8s.io/apiserver, never allows) when the SubjectAccessReview cannot be made', async () => {
    const user = `someone-${rand}`;
    const r = await call(podsPath(), {
      ...frontProxy(),
      headers: { 'X-Remote-User': user },
      on: brokenServer,
    });
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({
      reason: 'InternalError',
      message: `Internal error occurred: ${REVIEW_FAILED_REASON}`,
    });
  });

  it('keeps the authentication configmap current through its watch', async () => {
    let changed = 0;
    const off = auth.config.onChange(() => changed++);
    try {
      await kubectlOk([
        '-n',
        'kube-system',
        'patch',
        'configmap',
        'extension-apiserver-authentication',
        '--type=merge',
        '-p',
        JSON.stringify({ data: { [`annex-e2e-${rand}`]: 'x' } }),
      ]);
      const deadline = Date.now() + 10_000;
      while (changed === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(changed).toBeGreaterThan(0);
      expect(auth.config.current().requestHeader?.allowedNames).toEqual(['front-proxy-client']);
    } finally {
      off();
      await kubectl([
        '-n',
        'kube-system',
        'patch',
        'configmap',
        'extension-apiserver-authentication',
        '--type=json',
        '-p',
        JSON.stringify([{ op: 'remove', path: `/data/annex-e2e-${rand}` }]),
      ]);
    }
  });

  it('never logs a token', () => {
    const all = logLines.join('');
    expect(all).not.toContain(saToken);
    expect(all).not.toContain(annexToken);
    expect(all).toContain('loaded authentication configuration');
  });
});
