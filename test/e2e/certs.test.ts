// annex's certificates as the real kube-apiserver sees them. A tiny node:https server stands
// in for annex behind the ExternalName Service tiny.certs-e2e → localhost: the aggregator's
// availability probe (which verifies caBundle + `<svc>.<ns>.svc` since 1.36) and the webhook
// client must accept a certificate from ensureCertificates, reject one without the `.svc`
// SAN with Go's x509 error, and accept a caBundle written by `annex certs inject`.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCa, ensureCertificates, issue } from '../../src/certs/index.js';
import { applyObjects } from '../cluster/annex.js';
import { expectOneLineError, runCli } from '../cluster/cli.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
  type ClusterInfo,
} from '../cluster/harness.js';

const NS = 'certs-e2e';
const SVC = 'tiny';
const SERVER_NAME = `${SVC}.${NS}.svc`;

interface Tiny {
  port: number;
  /** Request lines the server answered ("GET /apis/…"). */
  requests: string[];
  /** TLS handshakes the client aborted (the peer rejected our certificate). */
  handshakeErrors: string[];
  close(): Promise<void>;
}

/**
 * The least a backend must do: legacy discovery for any `/apis/<g>/<v>` (the probe needs a
 * 2xx), 406 for aggregated discovery on `/apis` (the aggregator then falls back to legacy),
 * and a validating webhook on /validate that denies with a recognisable message.
 */
function startTiny(certPem: string, keyPem: string): Promise<Tiny> {
  const requests: string[] = [];
  const handshakeErrors: string[] = [];
  const server: Server = createServer({ cert: certPem, key: keyPem }, (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (status: number, body: object) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const gv = /^\/apis\/([^/]+)\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && gv) {
      return send(200, {
        kind: 'APIResourceList',
        apiVersion: 'v1',
        groupVersion: `${gv[1]}/${gv[2]}`,
        // Never an empty list (client-go logs "Got empty response" on every call).
        resources: [
          { name: 'pings', singularName: 'ping', namespaced: false, kind: 'Ping', verbs: ['get'] },
        ],
      });
    }
    if (req.method === 'POST' && path === '/validate') {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const review = JSON.parse(body) as { request: { uid: string } };
        send(200, {
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: {
            uid: review.request.uid,
            allowed: false,
            status: { code: 403, message: 'tiny says no' },
          },
        });
      });
      return;
    }
    const status = path === '/apis' ? 406 : 404;
    send(status, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: status });
  });
  server.on('tlsClientError', (e) => handshakeErrors.push(e.message));
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as AddressInfo).port,
        requests,
        handshakeErrors,
        close: () =>
          new Promise((r) => {
            server.closeAllConnections();
            server.close(() => r());
          }),
      });
    });
  });
}

function apiService(group: string, port: number, caBundle?: string): any {
  return {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: `v1.${group}` },
    spec: {
      group,
      version: 'v1',
      service: { namespace: NS, name: SVC, port },
      groupPriorityMinimum: 100,
      versionPriority: 10,
      ...(caBundle ? { caBundle } : {}),
    },
  };
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

async function availableCondition(name: string): Promise<Condition | undefined> {
  const obj = JSON.parse(await kubectlOk(['get', 'apiservice', name, '-o', 'json']));
  return (obj.status?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Available');
}

/** Polls the Available condition until `done` holds; returns the last one seen. */
async function availableWhen(
  name: string,
  done: (c: Condition | undefined) => boolean,
  timeoutMs = 60_000,
): Promise<Condition | undefined> {
  const deadline = Date.now() + timeoutMs;
  let last: Condition | undefined;
  while (Date.now() < deadline) {
    last = await availableCondition(name);
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`apiservice ${name}: condition not reached, last ${JSON.stringify(last)}`);
}

describeCluster('TLS certificates against the real API server', (c: ClusterInfo) => {
  let dir: string;
  let good: Tiny;
  let goodCa: string; // PEM
  let noSvc: Tiny;
  let noSvcCa: string;
  const created: { kind: string; name: string }[] = [];

  async function create(obj: any): Promise<void> {
    created.push({ kind: obj.kind, name: obj.metadata.name });
    await applyObjects([obj]);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-certs-e2e-'));
    const made = await ensureCertificates({ dir: join(dir, 'good'), service: SVC, namespace: NS });
    goodCa = made.caPem;
    good = await startTiny(made.certPem, made.keyPem);

    // Everything a careless generator would put in, except the name the API server dials.
    const ca = await createCa();
    const leaf = await issue({
      ca,
      commonName: `${SVC}.${NS}`,
      usages: ['serverAuth'],
      dnsNames: [SVC, `${SVC}.${NS}`, 'localhost'],
      ipAddresses: ['127.0.0.1'],
    });
    noSvcCa = ca.certPem;
    noSvc = await startTiny(leaf.certPem, leaf.keyPem);

    await applyObjects([
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: SVC, namespace: NS },
        spec: { type: 'ExternalName', externalName: 'localhost' },
      },
    ]);
  });

  afterAll(async () => {
    // Unavailable APIServices would put discovery warnings into every later kubectl call.
    for (const o of created.reverse()) {
      await kubectl(['delete', o.kind, o.name, '--ignore-not-found', '--wait=false']);
    }
    await kubectl(['-n', NS, 'delete', 'service', SVC, '--ignore-not-found', '--wait=false']);
    await good?.close();
    await noSvc?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('an APIService with the ensureCertificates caBundle becomes Available and proxies', async () => {
    const name = 'v1.tiny.certs.annex.dev';
    await create(
      apiService('tiny.certs.annex.dev', good.port, Buffer.from(goodCa).toString('base64')),
    );
    expect(await waitForCondition([`apiservice/${name}`], 'Available')).toContain('condition met');
    const cond = await availableCondition(name);
    expect(cond).toMatchObject({ status: 'True', reason: 'Passed' });
    // The probe reached the server over verified TLS.
    expect(good.requests).toContain('GET /apis/tiny.certs.annex.dev/v1');
    // And a real request goes through the aggregator's proxy, same TLS settings.
    const raw = JSON.parse(await kubectlOk(['get', '--raw', '/apis/tiny.certs.annex.dev/v1']));
    expect(raw).toMatchObject({
      kind: 'APIResourceList',
      groupVersion: 'tiny.certs.annex.dev/v1',
      resources: [{ name: 'pings' }],
    });
  });

  it('a certificate without the .svc SAN keeps the APIService unavailable with x509 in the message', async () => {
    const name = 'v1.nosvc.certs.annex.dev';
    await create(
      apiService('nosvc.certs.annex.dev', noSvc.port, Buffer.from(noSvcCa).toString('base64')),
    );
    const cond = await availableWhen(name, (k) => !!k?.message?.includes('x509'));
    expect(cond).toMatchObject({ status: 'False', reason: 'FailedDiscoveryCheck' });
    // Go's HostnameError lists the certificate's DNS SANs in their order, then the name wanted.
    expect(cond!.message).toContain(
      `tls: failed to verify certificate: x509: certificate is valid for tiny, tiny.certs-e2e, localhost, not ${SERVER_NAME}`,
    );
    expect(cond!.message).toMatch(
      new RegExp(
        `^failing or missing response from https://localhost:${noSvc.port}/apis/nosvc\\.certs\\.annex\\.dev/v1: `,
      ),
    );
    // The handshake was refused by the API server: no HTTP request ever arrived.
    expect(noSvc.handshakeErrors.length).toBeGreaterThan(0);
    expect(noSvc.handshakeErrors[0]).toMatch(/alert bad certificate/);
    expect(noSvc.requests).toEqual([]);
    await expect(
      waitForCondition([`apiservice/${name}`], 'Available', { timeoutMs: 5_000 }),
    ).rejects.toThrow(/timed out waiting for the condition/);
    expect((await availableCondition(name))?.status).toBe('False');
    const raw = await kubectl(['get', '--raw', '/apis/nosvc.certs.annex.dev/v1']);
    expect(raw.code).not.toBe(0);
    expect(raw.stderr).toContain('the server is currently unable to handle the request');
  });

  it('the webhook client accepts the good certificate and names the x509 error for the other', async () => {
    const ns = await createNamespace('certs-wh');
    const label = 'certs-e2e.annex.dev/webhook';
    const hook = (name: string, port: number, caPem: string, value: string) => ({
      name,
      clientConfig: {
        service: { namespace: NS, name: SVC, port, path: '/validate' },
        caBundle: Buffer.from(caPem).toString('base64'),
      },
      rules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
      ],
      namespaceSelector: { matchLabels: { [label]: value } },
      failurePolicy: 'Fail',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 5,
    });
    await create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'certs-e2e-tls' },
      webhooks: [
        hook('good.certs.annex.dev', good.port, goodCa, `good-${ns}`),
        hook('nosvc.certs.annex.dev', noSvc.port, noSvcCa, `nosvc-${ns}`),
      ],
    });

    // Webhook configurations reach the admission plugin asynchronously: retry until called.
    const createUntil = async (value: string, done: (stderr: string) => boolean) => {
      await kubectlOk(['label', 'namespace', ns, `${label}=${value}`, '--overwrite']);
      const deadline = Date.now() + 30_000;
      for (let i = 0; ; i++) {
        const r = await kubectl(['-n', ns, 'create', 'configmap', `${value.split('-')[0]}-${i}`]);
        if (r.code !== 0 && done(r.stderr)) return r.stderr.trim();
        if (Date.now() > deadline) throw new Error(`webhook never called: ${r.stderr}`);
        await new Promise((res) => setTimeout(res, 500));
      }
    };

    const denied = await createUntil(`good-${ns}`, (e) => e.includes('tiny says no'));
    expect(denied).toBe(
      'error: failed to create configmap: admission webhook "good.certs.annex.dev" denied the request: tiny says no',
    );
    const failed = await createUntil(`nosvc-${ns}`, (e) => e.includes('x509'));
    expect(failed).toContain(
      `failed calling webhook "nosvc.certs.annex.dev": failed to call webhook: Post "https://${SERVER_NAME}:${noSvc.port}/validate?timeout=5s": tls: failed to verify certificate: x509: certificate is valid for tiny, tiny.certs-e2e, localhost, not ${SERVER_NAME}`,
    );
  });

  it('`annex certs inject` writes the caBundles as field manager annex, and the APIService turns Available', async () => {
    const apiName = 'v1.inject.certs.annex.dev';
    // Without a caBundle the probe trusts only the system roots.
    await create(apiService('inject.certs.annex.dev', good.port));
    const before = await availableWhen(apiName, (k) => !!k?.message?.includes('x509'));
    expect(before).toMatchObject({ status: 'False', reason: 'FailedDiscoveryCheck' });
    expect(before!.message).toContain(
      'tls: failed to verify certificate: x509: certificate signed by unknown authority',
    );

    // Webhooks that can never match (no namespace has the label) and never fail a request.
    const inert = (name: string) => ({
      name,
      clientConfig: { service: { namespace: NS, name: SVC, port: good.port, path: '/validate' } },
      rules: [
        { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
      ],
      namespaceSelector: {
        matchExpressions: [{ key: 'certs-e2e.annex.dev/never', operator: 'Exists' }],
      },
      failurePolicy: 'Ignore',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
    });
    await create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'certs-e2e-inject' },
      webhooks: [inert('a.inject.certs.annex.dev'), inert('b.inject.certs.annex.dev')],
    });
    await create({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'certs-e2e-inject' },
      webhooks: [inert('m.inject.certs.annex.dev')],
    });

    const caFile = join(dir, 'good', 'ca.crt');
    const args = [
      'certs',
      'inject',
      '--kubeconfig',
      c.adminKubeconfig,
      '--apiservice',
      apiName,
      '--validating',
      'certs-e2e-inject',
      '--mutating',
      'certs-e2e-inject',
      '--ca-file',
      caFile,
    ];
    const env = { KUBECONFIG: '' };
    const r = await runCli(args, env);
    expect(r.stderr.trim().split('\n')).toEqual([
      `patched apiservice ${apiName}`,
      'patched mutatingwebhookconfiguration certs-e2e-inject (1 webhooks)',
      'patched validatingwebhookconfiguration certs-e2e-inject (2 webhooks)',
    ]);
    expect(r.code).toBe(0);

    const bundle = readFileSync(caFile).toString('base64');
    const get = async (kind: string, name: string) =>
      JSON.parse(await kubectlOk(['get', kind, name, '-o', 'json', '--show-managed-fields']));
    const managers = (o: any) =>
      (o.metadata.managedFields as { manager: string }[]).map((m) => m.manager);

    const api = await get('apiservice', apiName);
    expect(api.spec.caBundle).toBe(bundle);
    expect(managers(api)).toContain('annex');
    const annexFields = api.metadata.managedFields.find((m: any) => m.manager === 'annex');
    expect(annexFields.fieldsV1['f:spec']).toHaveProperty('f:caBundle');
    for (const kind of ['validatingwebhookconfiguration', 'mutatingwebhookconfiguration']) {
      const o = await get(kind, 'certs-e2e-inject');
      expect(o.webhooks.map((w: any) => w.clientConfig.caBundle)).toEqual(
        o.webhooks.map(() => bundle),
      );
      expect(managers(o)).toContain('annex');
    }

    // Idempotent: a second run changes nothing.
    const again = await runCli(args, env);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/^unchanged apiservice /);
    expect(again.stderr).not.toMatch(/patched/);

    await waitForCondition([`apiservice/${apiName}`], 'Available');
    expect(await availableCondition(apiName)).toMatchObject({ status: 'True', reason: 'Passed' });
  });

  it('`annex certs inject` with a missing kubeconfig fails with one line naming it', async () => {
    const missing = join(dir, 'nope.kubeconfig');
    const r = await runCli(
      ['certs', 'inject', '--kubeconfig', missing, '--apiservice', 'v1.x.certs.annex.dev'].concat([
        '--ca-file',
        join(dir, 'good', 'ca.crt'),
      ]),
      {},
    );
    expect(expectOneLineError(r)).toBe(`annex: --kubeconfig ${missing}: file not found`);
  });
});

describe('annex certs generate: bad input through the real CLI', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'annex-certs-cli-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a service name that is not an RFC 1123 label, naming --service', async () => {
    const out = join(dir, 'never');
    const r = await runCli([
      'certs',
      'generate',
      '--service',
      'Bad_Name',
      '--namespace',
      'x',
      '--out',
      out,
    ]);
    expect(expectOneLineError(r)).toMatch(
      /^annex: --service must be an RFC 1123 label .*"Bad_Name"$/,
    );
    expect(r.stdout).toBe('');
    expect(existsSync(out)).toBe(false);
  });

  it('refuses a namespace that is not an RFC 1123 label, naming --namespace', async () => {
    const r = await runCli([
      'certs',
      'generate',
      '--service',
      'x',
      '--namespace',
      'ns.with.dots',
      '--out',
      join(dir, 'n'),
    ]);
    expect(expectOneLineError(r)).toMatch(
      /^annex: --namespace must be an RFC 1123 label .*"ns\.with\.dots"$/,
    );
  });

  it('names the directory it cannot create under a regular file', async () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'not a directory\n');
    const out = join(file, 'certs');
    const r = await runCli([
      'certs',
      'generate',
      '--service',
      'x',
      '--namespace',
      'y',
      '--out',
      out,
    ]);
    expect(expectOneLineError(r)).toBe(
      `annex: cannot create certificate directory ${out}: ENOTDIR: not a directory, mkdir '${out}'`,
    );
  });

  it.runIf(existsSync('/proc/self'))(
    'fails fast where mkdir says ENOENT under an existing parent (/proc)',
    async () => {
      // Node 20's recursive mkdir loops forever here; annex must answer in well under 30 s.
      const t0 = Date.now();
      const r = await runCli([
        'certs',
        'generate',
        '--service',
        'x',
        '--namespace',
        'y',
        '--out',
        '/proc/annex-certs',
      ]);
      expect(expectOneLineError(r)).toMatch(
        /^annex: cannot create certificate directory \/proc\/annex-certs: ENOENT/,
      );
      expect(Date.now() - t0).toBeLessThan(10_000);
    },
  );
});
