import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../log.js';
import { StatusError } from '../core/status.js';
import type { Logger } from '../log.js';
import { MAX_REVIEW_BYTES } from './server.js';
import { allow, denyInvalid } from './verdict.js';
import { mutatingWebhook, validatingWebhook, type ReviewContext, type Webhook } from './webhook.js';
import { postJson } from '../../test/unit/post-json.js';
import { lateness } from '../../test/unit/lateness.js';
import { appOf } from '../../test/unit/app-of.js';

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
const rules = [
  {
    operations: ['CREATE' as const],
    apiGroups: ['apps'],
    apiVersions: ['v1'],
    resources: ['deployments'],
  },
];
const labeler = mutatingWebhook({
  name: 'labels.test.annex.dev',
  rules,
  admit: (req) => ({
    allowed: true,
    object: {
      ...req.object!,
      metadata: { ...req.object!.metadata, labels: { 'app.kubernetes.io/name': 'x', 'a~b': 'y' } },
    },
  }),
});
const namer = validatingWebhook({
  name: 'names.test.annex.dev',
  rules,
  admit: (req) =>
    req.object!.metadata.name.includes('.')
      ? denyInvalid(req, req.object!.metadata.name, [
          { field: 'metadata.name', message: 'Invalid value: "a.b": no dots' },
        ])
      : allow(['looks fine']),
});
const slow = validatingWebhook({
  name: 'slow.test.annex.dev',
  rules,
  admit: () => new Promise(() => {}),
});

/** The context each review's handler was given, and when a handler saw its signal abort. */
let given: ReviewContext | undefined;
let abortedAt = 0;
const probe = validatingWebhook({
  name: 'probe.test.annex.dev',
  rules,
  admit: (_req, ctx) => {
    given = ctx;
    return allow();
  },
});
const patient = validatingWebhook({
  name: 'patient.test.annex.dev',
  rules,
  admit: (_req, ctx) => {
    given = ctx;
    return new Promise((resolve) =>
      ctx.signal.addEventListener('abort', () => {
        abortedAt = performance.now();
        resolve(allow());
      }),
    );
  },
});

/** The one request chain (src/server/app.ts) serving these webhooks. */
const webhookApp = (hooks: Webhook[], logger: Logger = log, maxBytesInFlight = Infinity): Koa =>
  appOf({ log: logger, webhooks: hooks, maxReviewBytesInFlight: maxBytesInFlight });

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer(webhookApp([labeler, namer, slow, probe, patient]).callback());
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

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  postJson(base + path, body, headers);

describe('admission webhook server: the review log line', () => {
  it('names uid, kind, namespace, name, operation, decision and latency, never the object', async () => {
    const { lines, sink } = capture();
    const srv = createServer(webhookApp([namer], createLogger('info', sink)).callback());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/validate/names.test.annex.dev`;
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
      '/mutate/labels.test.annex.dev',
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
      '/mutate/labels.test.annex.dev',
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
      '/validate/names.test.annex.dev',
      review('admission.k8s.io/v1beta1', { metadata: { name: 'web' } }),
    );
    expect(r.json.apiVersion).toBe('admission.k8s.io/v1beta1');
    expect(r.json.response).toEqual({ uid: 'c0ffee', allowed: true, warnings: ['looks fine'] });
  });

  it('denies with a 422 Invalid status that kubectl renders like built-in validation', async () => {
    const r = await post(
      '/validate/names.test.annex.dev',
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
    const r = await post('/validate/names.test.annex.dev', body);
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
    const r = await post('/validate/names.test.annex.dev', 'x', { 'content-type': 'text/plain' });
    expect(r.status).toBe(415);
    expect(r.json.reason).toBe('UnsupportedMediaType');
    const big = JSON.stringify(
      review('admission.k8s.io/v1', {
        metadata: { name: 'a' },
        data: 'x'.repeat(MAX_REVIEW_BYTES),
      }),
    );
    const r2 = await post('/validate/names.test.annex.dev', big);
    expect(r2.status).toBe(413);
    expect(r2.json).toMatchObject({ kind: 'Status', reason: 'RequestEntityTooLarge', code: 413 });
  });

  it('answers before the deadline given in ?timeout=', async () => {
    const late = lateness();
    const t0 = performance.now();
    const r = await post(
      '/validate/slow.test.annex.dev?timeout=1s',
      review('admission.k8s.io/v1', { metadata: { name: 'a' } }),
    );
    // The handler never answers: annex's own budget did, before the deadline (this
    // process's timers running late on a busy machine aside).
    expect(performance.now() - t0 - late.ms()).toBeLessThan(1000);
    late.stop();
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

describe('admission webhook server: the review context', () => {
  const deployment = review('admission.k8s.io/v1', { metadata: { name: 'a' } });

  it("gives the handler ?timeout='s deadline (less the margin) and its signal; no admission.clientCA: unauthenticated", async () => {
    const t0 = performance.now();
    expect(
      (await post('/validate/probe.test.annex.dev?timeout=4s', deployment)).json.response.allowed,
    ).toBe(true);
    const t1 = performance.now();
    expect(given!.deadline).toBeGreaterThanOrEqual(t0 + 3200);
    expect(given!.deadline).toBeLessThanOrEqual(t1 + 3200);
    expect(given!.signal.aborted).toBe(false);
    expect(given!.authenticated).toBe(false);
  });

  it('aborts the signal at that deadline, and the review is answered as overrun', async () => {
    const r = await post('/validate/patient.test.annex.dev?timeout=1s', deployment);
    expect(r.json.response.status).toMatchObject({ code: 504, reason: 'Timeout' });
    expect(given!.signal.aborted).toBe(true);
    expect(abortedAt).toBeGreaterThanOrEqual(given!.deadline - 1); // timers may fire a hair early
  });
});

describe('admission webhook server: the declaration decides', () => {
  let calls = 0;
  const thrower = (failurePolicy: 'Fail' | 'Ignore') =>
    validatingWebhook({
      name: `throws-${failurePolicy.toLowerCase()}.test.annex.dev`,
      rules,
      failurePolicy,
      admit: () => {
        calls++;
        throw new TypeError('value "SECRET" is not a string');
      },
    });
  // Refuses by throwing a StatusError: synchronously under Ignore, as a rejection under Fail.
  const refuser = (failurePolicy: 'Fail' | 'Ignore') =>
    validatingWebhook({
      name: `refuses-${failurePolicy.toLowerCase()}.test.annex.dev`,
      rules,
      failurePolicy,
      admit: () => {
        const err = new StatusError(409, 'Conflict', 'quota "q" is held by another deployment', {
          causes: [{ reason: 'FieldValueInvalid', field: 'spec.quota', message: 'held' }],
        });
        if (failurePolicy === 'Ignore') throw err;
        return Promise.reject(err);
      },
    });
  let srv: Server;
  let url = '';
  const lines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    srv = createServer(
      webhookApp(
        [thrower('Fail'), thrower('Ignore'), refuser('Fail'), refuser('Ignore')],
        createLogger('info', sink),
      ).callback(),
    );
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => srv.close(() => r())));
  const send = async (path: string, extra: object = {}) => {
    const res = await fetch(url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(review('admission.k8s.io/v1', { metadata: { name: 'a' } }, extra)),
    });
    return { status: res.status, json: (await res.json()) as any };
  };

  it('a handler that throws under failurePolicy Fail is a denial naming the error class, not an HTTP 500', async () => {
    const r = await send('/validate/throws-fail.test.annex.dev');
    expect(r.status).toBe(200);
    expect(r.json.response).toMatchObject({
      uid: 'c0ffee',
      allowed: false,
      status: {
        code: 500,
        reason: 'InternalError',
        message: 'annex webhook "throws-fail.test.annex.dev" failed: TypeError',
      },
    });
    expect(lines.join('')).not.toContain('SECRET');
    expect(lines.some((l) => l.includes('"error":"TypeError"'))).toBe(true);
  });

  it('under failurePolicy Ignore it is allowed, with a warning', async () => {
    const r = await send('/validate/throws-ignore.test.annex.dev');
    expect(r.json.response).toEqual({
      uid: 'c0ffee',
      allowed: true,
      warnings: [
        'annex webhook "throws-ignore.test.annex.dev" failed: TypeError; allowed (failurePolicy Ignore)',
      ],
    });
  });

  it('a handler that throws a StatusError denies with that Status, even under failurePolicy Ignore', async () => {
    const r = await send('/validate/refuses-ignore.test.annex.dev');
    expect(r.status).toBe(200);
    expect(r.json.response).toEqual({
      uid: 'c0ffee',
      allowed: false,
      status: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        code: 409,
        reason: 'Conflict',
        message: 'quota "q" is held by another deployment',
        details: {
          causes: [{ reason: 'FieldValueInvalid', field: 'spec.quota', message: 'held' }],
        },
      },
    });
  });

  it('so does a rejected promise with a StatusError, under failurePolicy Fail', async () => {
    const r = await send('/validate/refuses-fail.test.annex.dev');
    expect(r.json.response).toMatchObject({
      allowed: false,
      status: { code: 409, reason: 'Conflict', message: 'quota "q" is held by another deployment' },
    });
  });

  it('a request no registration matches is allowed without calling the handler', async () => {
    const before = calls;
    const r = await send('/validate/throws-fail.test.annex.dev', { operation: 'DELETE' });
    expect(r.json.response).toEqual({ uid: 'c0ffee', allowed: true });
    expect(calls).toBe(before);
  });

  describe('admission webhook server: review bytes in flight', () => {
    it('refuses beyond the bound with 429 and Retry-After, and frees the bytes once answered', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      const held = validatingWebhook({
        name: 'held.test.annex.dev',
        rules,
        admit: async () => {
          entered();
          await gate;
          return allow();
        },
      });
      const srv = createServer(webhookApp([held, namer], log, 1000).callback());
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
      const first = send('/validate/held.test.annex.dev');
      await inside;
      const refused = await send('/validate/names.test.annex.dev');
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
      const again = await send('/validate/names.test.annex.dev');
      expect(again.status).toBe(200);
      srv.closeAllConnections();
      srv.close();
    });
  });
});
