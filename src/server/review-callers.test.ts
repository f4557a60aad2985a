// Who sent an AdmissionReview, over real TLS on loopback: the one request chain
// (src/server/app.ts) serving a webhook and a conversion, a listener that requests client certificates, and three
// callers — one with a certificate from admission.clientCA (the API server), one with none,
// one with a certificate from another CA.
import { copyFileSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allow } from '../admission/verdict.js';
import { validatingWebhook, type ReviewContext } from '../admission/webhook.js';
import { createCa, ensureCertificates, issue, loadServingMaterial } from '../certs/index.js';
import { crdConversion } from '../conversion/declare.js';
import { UserError } from '../errors.js';
import { createLogger } from '../log.js';
import { admissionClientCa } from './admission-ca.js';
import { listen, type Listening } from './listen.js';
import { reviewCallers, type ReviewCallers } from './review-callers.js';
import { appOf } from '../../test/unit/app-of.js';

const log = createLogger('silent');
const dir = mkdtempSync(join(tmpdir(), 'annex-callers-'));
const caFile = join(dir, 'webhook-client-ca.crt');
type Id = { cert: string; key: string };
let apiServer: Id;
let stranger: Id;
let serving: { cert: string; key: string; ca: string };
const servers: Listening[] = [];

let given: ReviewContext | undefined;
const hook = validatingWebhook({
  name: 'seen.test.annex.dev',
  rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
  admit: (_req, ctx) => {
    given = ctx;
    return allow();
  },
});
const conversion = crdConversion({
  group: 'test.annex.dev',
  kind: 'Thing',
  plural: 'things',
  hub: 'v2',
  versions: { v1: { toHub: (o) => o, fromHub: (o) => o } },
});
const admissionReview = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'forged?',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace: 'ns',
    operation: 'CREATE',
    userInfo: { username: 'system:admin', groups: ['system:masters'] },
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' } },
  },
};

/** The review routes behind TLS, as annex serves them. */
async function serve(callers: ReviewCallers, requireClientCert = false): Promise<string> {
  const app = appOf({
    log,
    webhooks: [hook],
    conversions: [conversion],
    reviewCallers: callers,
    requireClientCert,
  });
  const server = await listen(app, {
    host: '127.0.0.1',
    port: 0,
    keepAliveTimeoutSeconds: 100,
    tls: { cert: serving.cert, key: serving.key },
  });
  servers.push(server);
  return server.url;
}

/** One POST on a fresh connection, as `id` or with no certificate. */
function post(base: string, path: string, body: unknown, id?: Id) {
  return new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = request(
      new URL(path, base),
      {
        method: 'POST',
        ca: serving.ca,
        servername: 'localhost',
        agent: false,
        headers: { 'content-type': 'application/json' },
        ...id,
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

beforeAll(async () => {
  await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  const m = loadServingMaterial(dir);
  serving = { cert: m.cert, key: m.key, ca: m.ca! };
  const webhookCa = await createCa({ commonName: 'webhook-client-ca' });
  writeFileSync(caFile, webhookCa.certPem);
  const client = await issue({
    ca: webhookCa,
    commonName: 'kube-apiserver-webhook-client',
    usages: ['clientAuth'],
  });
  apiServer = { cert: client.certPem, key: client.keyPem };
  const other = await issue({
    ca: await createCa({ commonName: 'some-other-ca' }),
    commonName: 'kube-apiserver-webhook-client',
    usages: ['clientAuth'],
  });
  stranger = { cert: other.certPem, key: other.keyPem };
}, 60_000);

afterAll(async () => {
  for (const s of servers) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('review callers', () => {
  it('a certificate from admission.clientCA is authenticated; none, or another CA, is answered unauthenticated', async () => {
    const ca = admissionClientCa(caFile, { required: false, log });
    const callers = reviewCallers(ca);
    const base = await serve(callers);
    expect(callers.report()).toBe('no AdmissionReview yet');

    const asApiServer = await post(
      base,
      '/validate/seen.test.annex.dev',
      admissionReview,
      apiServer,
    );
    expect(asApiServer.status).toBe(200);
    expect(asApiServer.json.response).toMatchObject({ uid: 'forged?', allowed: true });
    expect(given!.authenticated).toBe(true);

    for (const id of [undefined, stranger]) {
      given = undefined;
      const r = await post(base, '/validate/seen.test.annex.dev', admissionReview, id);
      expect(r.status).toBe(200);
      expect(r.json.response).toMatchObject({ uid: 'forged?', allowed: true });
      expect(given!.authenticated).toBe(false);
    }
    expect(callers.report()).toMatch(
      /^1 authenticated \(last \d+s ago\), 2 unauthenticated \(last \d+s ago: x509: certificate signed by unknown authority\)$/,
    );
    ca.stop();
  });

  it('admission.requireClientCert: the others get a 401 Status; ConversionReviews are never asked', async () => {
    const ca = admissionClientCa(caFile, { required: true, log });
    const callers = reviewCallers(ca);
    const base = await serve(callers, true);
    for (const id of [undefined, stranger]) {
      given = undefined;
      const r = await post(base, '/validate/seen.test.annex.dev', admissionReview, id);
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
      expect(given).toBeUndefined();
    }
    expect(
      (await post(base, '/validate/seen.test.annex.dev', admissionReview, apiServer)).status,
    ).toBe(200);
    expect(given!.authenticated).toBe(true);
    expect(callers.report()).toMatch(
      /^1 authenticated \(.*\), 2 unauthenticated \(last \d+s ago: x509: certificate signed by unknown authority\)$/,
    );
    // The API server calls conversion webhooks without a client certificate.
    const converted = await post(base, '/convert/things.test.annex.dev', {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'c', desiredAPIVersion: 'test.annex.dev/v2', objects: [] },
    });
    expect(converted.status).toBe(200);
    expect(converted.json.response).toMatchObject({ uid: 'c', result: { status: 'Success' } });
    ca.stop();
  });

  it('no admission.clientCA: every caller is unauthenticated, and the report says why', async () => {
    const callers = reviewCallers(admissionClientCa('', { required: false, log }));
    const base = await serve(callers);
    await post(base, '/validate/seen.test.annex.dev', admissionReview, apiServer);
    expect(given!.authenticated).toBe(false);
    expect(callers.report()).toMatch(
      /^admission.clientCA is not set; 0 authenticated, 1 unauthenticated \(last \d+s ago\)$/,
    );
  });

  it('a CA file that appears later (an optional ConfigMap) is read, and a removed one no longer trusted', async () => {
    const later = join(dir, 'later.crt');
    const ca = admissionClientCa(later, { required: false, log, pollMs: 20 });
    const callers = reviewCallers(ca);
    const base = await serve(callers);
    await post(base, '/validate/seen.test.annex.dev', admissionReview, apiServer);
    expect(given!.authenticated).toBe(false);
    expect(callers.report()).toMatch(
      new RegExp(
        `^admission.clientCA: cannot read ${later}: ENOENT; 0 authenticated, 1 unauthenticated \\(last \\d+s ago\\)$`,
      ),
    );

    const changed = () =>
      new Promise<void>((resolve) => {
        const off = ca.onChange(() => {
          off();
          resolve();
        });
      });
    let next = changed();
    copyFileSync(caFile, later);
    await next;
    expect(ca.problem()).toBeUndefined();
    await post(base, '/validate/seen.test.annex.dev', admissionReview, apiServer);
    expect(given!.authenticated).toBe(true);

    next = changed();
    unlinkSync(later);
    await next;
    expect(ca.certs()).toEqual([]);
    await post(base, '/validate/seen.test.annex.dev', admissionReview, apiServer);
    expect(given!.authenticated).toBe(false);
    ca.stop();
  });
});

describe('admission.clientCA at start', () => {
  it('is a UserError naming the file when unusable, or missing while required', () => {
    const bad = join(dir, 'bad.crt');
    writeFileSync(bad, 'not a certificate');
    expect(() => admissionClientCa(bad, { required: false, log })).toThrow(
      new UserError(`admission.clientCA: ${bad} holds no PEM certificate`),
    );
    const missing = join(dir, 'missing.crt');
    expect(() => admissionClientCa(missing, { required: true, log })).toThrow(
      new UserError(`admission.clientCA: cannot read ${missing}: ENOENT`),
    );
    expect(() => admissionClientCa('', { required: true, log })).toThrow(
      new UserError('admission.requireClientCert needs admission.clientCA (a PEM file)'),
    );
  });

  it('keeps the certificates it has when the file turns bad', async () => {
    const file = join(dir, 'turns-bad.crt');
    writeFileSync(file, loadServingMaterial(dir).ca!);
    const ca = admissionClientCa(file, { required: false, log, pollMs: 20 });
    const before = ca.certs();
    expect(before).toHaveLength(1);
    writeFileSync(file, '-----BEGIN CERTIFICATE-----\nhalf');
    await new Promise((r) => setTimeout(r, 200));
    expect(ca.certs()).toBe(before);
    expect(ca.problem()).toBeUndefined();
    ca.stop();
  });
});
