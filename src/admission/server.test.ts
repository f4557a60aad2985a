import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import { statusErrors } from '../server/errors.js';
import { admissionWebhooks, MAX_REVIEW_BYTES } from './server.js';
import { allow, denyInvalid, type Webhook } from './verdict.js';

const log = createLogger('silent');
/** A log destination that keeps every line written. */
function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, sink };
}
const labeler: Webhook = {
  name: 'labels',
  type: 'mutating',
  admit: (req) => ({
    allowed: true,
    object: {
      ...req.object!,
      metadata: { ...req.object!.metadata, labels: { 'app.kubernetes.io/name': 'x', 'a~b': 'y' } },
    },
  }),
};
const namer: Webhook = {
  name: 'names',
  type: 'validating',
  admit: (req) =>
    req.object!.metadata.name.includes('.')
      ? denyInvalid(req, req.object!.metadata.name, [
          { field: 'metadata.name', message: 'Invalid value: "a.b": no dots' },
        ])
      : allow(['looks fine']),
};
const slow: Webhook = { name: 'slow', type: 'validating', admit: () => new Promise(() => {}) };

let server: Server;
let base: string;
beforeAll(async () => {
  const app = new Koa();
  app.use(statusErrors(log));
  app.use(admissionWebhooks([labeler, namer, slow], log));
  server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const review = (apiVersion: string, object: object, extra: object = {}) => ({
  apiVersion,
  kind: 'AdmissionReview',
  request: {
    uid: 'c0ffee',
    kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps', version: 'v1', resource: 'deployments' },
    namespace: 'ns',
    operation: 'CREATE',
    object,
    dryRun: false,
    ...extra,
  },
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as any };
}

describe('admission webhook server: the review log line', () => {
  it('names uid, kind, namespace, name, operation, decision and latency, never the object', async () => {
    const { lines, sink } = capture();
    const app = new Koa();
    app.use(statusErrors(log));
    app.use(admissionWebhooks([namer], createLogger('info', sink)));
    const srv = createServer(app.callback());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/validate/names`;
    const body = review('admission.k8s.io/v1', {
      metadata: { name: 'a.b', annotations: { secret: 'hunter2' } },
    });
    await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    srv.close();
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0]!);
    expect(entry).toMatchObject({
      msg: 'admission review',
      webhook: 'names',
      uid: 'c0ffee',
      kind: 'Deployment',
      namespace: 'ns',
      name: 'a.b',
      operation: 'CREATE',
      dryRun: false,
      decision: 'deny',
    });
    expect(typeof entry.ms).toBe('number');
    expect(lines[0]).not.toContain('hunter2');
  });
});

describe('admission webhook server', () => {
  it('answers a v1 review with the same uid and a base64 JSON Patch with escaped keys', async () => {
    const r = await post(
      '/mutate/labels',
      review('admission.k8s.io/v1', { metadata: { name: 'web' } }),
    );
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' });
    expect(r.json.response).toMatchObject({ uid: 'c0ffee', allowed: true, patchType: 'JSONPatch' });
    const ops = JSON.parse(Buffer.from(r.json.response.patch, 'base64').toString());
    expect(ops).toEqual([
      { op: 'add', path: '/metadata/labels', value: { 'app.kubernetes.io/name': 'x', 'a~b': 'y' } },
    ]);
  });

  it('escapes "/" and "~" when adding to an existing map', async () => {
    const r = await post(
      '/mutate/labels',
      review('admission.k8s.io/v1', { metadata: { name: 'web', labels: {} } }),
    );
    const ops = JSON.parse(Buffer.from(r.json.response.patch, 'base64').toString());
    expect(ops).toContainEqual({
      op: 'add',
      path: '/metadata/labels/app.kubernetes.io~1name',
      value: 'x',
    });
    expect(ops).toContainEqual({ op: 'add', path: '/metadata/labels/a~0b', value: 'y' });
  });

  it('answers v1beta1 in v1beta1', async () => {
    const r = await post(
      '/validate/names',
      review('admission.k8s.io/v1beta1', { metadata: { name: 'web' } }),
    );
    expect(r.json.apiVersion).toBe('admission.k8s.io/v1beta1');
    expect(r.json.response).toEqual({ uid: 'c0ffee', allowed: true, warnings: ['looks fine'] });
  });

  it('denies with a 422 Invalid status that kubectl renders like built-in validation', async () => {
    const r = await post(
      '/validate/names',
      review('admission.k8s.io/v1', { metadata: { name: 'a.b' } }),
    );
    expect(r.json.response.allowed).toBe(false);
    expect(r.json.response.patch).toBeUndefined();
    expect(r.json.response.status).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message: 'Deployment.apps "a.b" is invalid: metadata.name: Invalid value: "a.b": no dots',
      details: {
        name: 'a.b',
        group: 'apps',
        kind: 'Deployment',
        causes: [{ field: 'metadata.name', reason: 'FieldValueInvalid' }],
      },
    });
  });

  it.each([
    ['malformed JSON', '{"apiVersion":', /not valid JSON/],
    [
      'a wrong kind',
      { apiVersion: 'admission.k8s.io/v1', kind: 'Pod', request: {} },
      /expected kind "AdmissionReview"/,
    ],
    [
      'a wrong apiVersion',
      { apiVersion: 'admission.k8s.io/v2', kind: 'AdmissionReview', request: {} },
      /unsupported AdmissionReview apiVersion/,
    ],
    [
      'no request',
      { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
      /has no request/,
    ],
    [
      'no uid',
      {
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        request: { operation: 'CREATE' },
      },
      /uid is missing/,
    ],
  ])('refuses %s with a 400 Status', async (_what, body, message) => {
    const r = await post('/validate/names', body);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'BadRequest',
      code: 400,
    });
    expect(r.json.message).toMatch(message);
  });

  it('refuses a non-JSON content type with 415 and a body over 7 MiB with 413', async () => {
    const r = await post('/validate/names', 'x', { 'content-type': 'text/plain' });
    expect(r.status).toBe(415);
    expect(r.json.reason).toBe('UnsupportedMediaType');
    const big = JSON.stringify(
      review('admission.k8s.io/v1', {
        metadata: { name: 'a' },
        data: 'x'.repeat(MAX_REVIEW_BYTES),
      }),
    );
    const r2 = await post('/validate/names', big);
    expect(r2.status).toBe(413);
    expect(r2.json).toMatchObject({ kind: 'Status', reason: 'RequestEntityTooLarge', code: 413 });
  });

  it('answers before the deadline given in ?timeout=', async () => {
    const t0 = Date.now();
    const r = await post(
      '/validate/slow?timeout=1s',
      review('admission.k8s.io/v1', { metadata: { name: 'a' } }),
    );
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(r.json.response).toMatchObject({
      uid: 'c0ffee',
      allowed: false,
      status: { code: 504, reason: 'Timeout' },
    });
  });

  it('leaves other paths to the next middleware', async () => {
    const res = await fetch(base + '/validate/unknown', { method: 'POST' });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ kind: 'Status', reason: 'NotFound' });
  });
});

describe('admission webhook server: a webhook that throws', () => {
  it('answers a review denying with a 500 Status; the log names the error class, never its message', async () => {
    const { lines, sink } = capture();
    const thrower: Webhook = {
      name: 'thrower',
      type: 'validating',
      admit: (req) => {
        throw new TypeError(`Cannot create property on string '${String(req.object?.spec)}'`);
      },
    };
    const app = new Koa();
    app.use(statusErrors(createLogger('info', sink)));
    app.use(admissionWebhooks([thrower], createLogger('info', sink)));
    const srv = createServer(app.callback());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const res = await fetch(
      `http://127.0.0.1:${(srv.address() as AddressInfo).port}/validate/thrower`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          review('admission.k8s.io/v1', { metadata: { name: 'web' }, spec: 'SECRET-SPEC' }),
        ),
      },
    );
    srv.close();
    expect(res.status).toBe(200);
    const json = (await res.json()) as any;
    expect(json.response).toMatchObject({
      uid: 'c0ffee',
      allowed: false,
      status: { code: 500, reason: 'InternalError' },
    });
    expect(json.response.status.message).toBe(
      'Internal error occurred: annex webhook "thrower" failed to evaluate the object (TypeError); see the annex log',
    );
    const all = lines.join('');
    expect(all).not.toContain('SECRET-SPEC');
    const entry = JSON.parse(lines.find((l) => l.includes('webhook failed'))!);
    expect(entry).toMatchObject({
      level: 50,
      webhook: 'thrower',
      error: 'TypeError',
      uid: 'c0ffee',
      kind: 'Deployment',
      namespace: 'ns',
      name: 'web',
    });
  });
});

describe('admission webhook server: review bytes in flight', () => {
  it('refuses beyond the bound with 429 and Retry-After, and frees the bytes once answered', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const held: Webhook = {
      name: 'held',
      type: 'validating',
      admit: async () => {
        entered();
        await gate;
        return allow();
      },
    };
    const app = new Koa();
    app.use(statusErrors(log));
    app.use(admissionWebhooks([held, namer], log, { maxInFlightBytes: 1000 }));
    const srv = createServer(app.callback());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const send = (path: string) =>
      fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // About 600 bytes: one fits under the bound of 1000, two do not.
        body: JSON.stringify(
          review('admission.k8s.io/v1', { metadata: { name: 'web' }, data: 'x'.repeat(400) }),
        ),
      });
    const first = send('/validate/held');
    await inside;
    const refused = await send('/validate/names');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(await refused.json()).toMatchObject({
      kind: 'Status',
      reason: 'TooManyRequests',
      code: 429,
      details: { retryAfterSeconds: 1 },
    });
    release();
    expect((await first).status).toBe(200);
    const again = await send('/validate/names');
    expect(again.status).toBe(200);
    srv.closeAllConnections();
    srv.close();
  });
});
