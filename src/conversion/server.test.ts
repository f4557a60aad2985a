import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeObject } from '../core/types.js';
import { createLogger, type Logger } from '../log.js';
import { crontabs, TIME_ANNOTATION } from '../../examples/crontab/feature.js';
import { crdConversion, type Conversion } from './declare.js';
import { MAX_CONVERSION_REVIEW_BYTES } from './server.js';
import { postJson } from '../../test/unit/post-json.js';
import { lateness } from '../../test/unit/lateness.js';
import { appOf } from '../../test/unit/app-of.js';

// The CronTab of the seed, as examples/crontab converts it: v1 (the hub) has `time`,
// v1beta1 keeps it in an annotation.
const TIME = TIME_ANNOTATION;

/** Every way a converter can go wrong, one per object name. */
const broken = crdConversion({
  group: 'broken.example.com',
  kind: 'Thing',
  plural: 'things',
  hub: 'v2',
  versions: {
    v1: {
      toHub(o) {
        const name = o.metadata.name;
        if (name === 'throws') throw new TypeError(`cannot read ${JSON.stringify(o)}`);
        if (name === 'finalizer') return { ...o, metadata: { ...o.metadata, finalizers: [] } };
        if (name === 'renames') return { ...o, metadata: { ...o.metadata, name: 'other' } };
        if (name === 'bad-label')
          return { ...o, metadata: { ...o.metadata, labels: { a: 1 as unknown as string } } };
        if (name === 'nothing') return null as unknown as KubeObject;
        if (name === 'slow') return new Promise<KubeObject>(() => {});
        return o;
      },
      fromHub: (o) => o,
    },
  },
});

const log = createLogger('silent');

/** The one request chain (src/server/app.ts) serving these conversions. */
const app = (conversions: Conversion[], logger: Logger = log): Koa =>
  appOf({ log: logger, conversions });

let server: Server;
let base: string;
beforeAll(async () => {
  server = createServer(app([crontabs, broken]).callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const meta = (name: string, extra: object = {}) => ({
  name,
  namespace: 'ns',
  uid: `uid-${name}`,
  resourceVersion: '7',
  creationTimestamp: '2025-01-01T00:00:00Z',
  finalizers: ['example.com/keep'],
  ...extra,
});

const review = (desiredAPIVersion: string, objects: unknown[], uid = 'c0ffee') => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'ConversionReview',
  request: { uid, desiredAPIVersion, objects },
});

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  postJson(base + path, body, headers);

describe('conversion server: ConversionReview apiextensions.k8s.io/v1', () => {
  it('echoes the uid and converts every object, in order, to the desired apiVersion', async () => {
    const objects = [
      { apiVersion: 'example.com/v1', kind: 'CronTab', metadata: meta('a'), host: 'h', time: '5m' },
      { apiVersion: 'example.com/v1beta1', kind: 'CronTab', metadata: meta('b'), host: 'h2' },
      { apiVersion: 'example.com/v1', kind: 'CronTab', metadata: meta('c'), port: '80' },
    ];
    const r = await post('/convert/crontabs.example.com', review('example.com/v1beta1', objects));
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
    });
    const { uid, result, convertedObjects } = r.json.response;
    expect(uid).toBe('c0ffee');
    expect(result).toEqual({ status: 'Success' });
    expect(convertedObjects.map((o: KubeObject) => [o.metadata.name, o.apiVersion])).toEqual([
      ['a', 'example.com/v1beta1'],
      ['b', 'example.com/v1beta1'],
      ['c', 'example.com/v1beta1'],
    ]);
    expect(convertedObjects[0]).toEqual({
      apiVersion: 'example.com/v1beta1',
      kind: 'CronTab',
      metadata: { ...meta('a'), annotations: { [TIME]: '5m' } },
      host: 'h',
    });
    // Already in the desired version: as it came.
    expect(convertedObjects[1]).toEqual(objects[1]);
  });

  it('round-trips v1 → v1beta1 → v1 without losing time', async () => {
    const v1 = { apiVersion: 'example.com/v1', kind: 'CronTab', metadata: meta('a'), time: '1h' };
    const down = await post('/convert/crontabs.example.com', review('example.com/v1beta1', [v1]));
    const [beta] = down.json.response.convertedObjects;
    expect(beta.time).toBeUndefined();
    const up = await post('/convert/crontabs.example.com', review('example.com/v1', [beta]));
    expect(up.json.response.convertedObjects).toEqual([v1]);
  });

  it.each([
    [
      'finalizer',
      'changed metadata.finalizers: a conversion may change only labels and annotations',
    ],
    ['renames', 'changed metadata.name: a conversion may change only labels and annotations'],
    ['bad-label', 'metadata.labels must map strings to strings'],
    ['throws', 'failed: TypeError'],
    ['nothing', 'v1.toHub returned no object'],
  ])(
    'a converter that %s gets a Failed result naming the object, never its values',
    async (name, why) => {
      const objects = [
        { apiVersion: 'broken.example.com/v1', kind: 'Thing', metadata: meta('fine') },
        {
          apiVersion: 'broken.example.com/v1',
          kind: 'Thing',
          metadata: meta(name),
          secret: 'hunter2',
        },
      ];
      const r = await post(
        '/convert/things.broken.example.com',
        review('broken.example.com/v2', objects),
      );
      expect(r.status).toBe(200);
      expect(r.json.response).toEqual({
        uid: 'c0ffee',
        convertedObjects: [],
        result: {
          status: 'Failed',
          message: expect.stringContaining(
            `annex conversion "things.broken.example.com": object 1 (ns/${name}) from v1 to v2`,
          ),
        },
      });
      expect(r.json.response.result.message).toContain(why);
      expect(r.json.response.result.message).not.toContain('hunter2');
    },
  );

  it('a converter that overruns the deadline gets a Failed result in time', async () => {
    const slow = { apiVersion: 'broken.example.com/v1', kind: 'Thing', metadata: meta('slow') };
    const late = lateness();
    const t0 = performance.now();
    const r = await post(
      '/convert/things.broken.example.com?timeout=1s',
      review('broken.example.com/v2', [slow]),
    );
    // The converter never answers: annex's own budget did, before the deadline (this
    // process's timers running late on a busy machine aside).
    expect(performance.now() - t0 - late.ms()).toBeLessThan(1000);
    late.stop();
    expect(r.json.response.result).toEqual({
      status: 'Failed',
      message: 'annex conversion "things.broken.example.com": could not decide within 750 ms',
    });
  });

  it.each([
    [
      'an unknown desired version',
      'example.com/v2',
      { apiVersion: 'example.com/v1', kind: 'CronTab', metadata: meta('a') },
      'cannot convert to "example.com/v2": not a version of crontabs.example.com (v1, v1beta1)',
    ],
    [
      'another group',
      'other.com/v1',
      { apiVersion: 'example.com/v1', kind: 'CronTab', metadata: meta('a') },
      'cannot convert to "other.com/v1"',
    ],
    [
      'an object of an unknown version',
      'example.com/v1',
      { apiVersion: 'example.com/v9', kind: 'CronTab', metadata: meta('a') },
      'object 0 (ns/a) has apiVersion "example.com/v9", not a version of crontabs.example.com',
    ],
    [
      'an object of another kind',
      'example.com/v1',
      { apiVersion: 'example.com/v1beta1', kind: 'Pod', metadata: meta('a') },
      'object 0 (ns/a) is of kind "Pod", not CronTab',
    ],
    [
      'an object without metadata',
      'example.com/v1',
      { apiVersion: 'example.com/v1beta1', kind: 'CronTab' },
      'object 0 is not an object with metadata',
    ],
    [
      'a too deeply nested object',
      'example.com/v1',
      {
        apiVersion: 'example.com/v1beta1',
        kind: 'CronTab',
        metadata: meta('a'),
        deep: JSON.parse('['.repeat(2000) + ']'.repeat(2000)),
      },
      'object 0 (ns/a) is nested more than 1000 levels deep',
    ],
  ])('%s is a Failed result', async (_what, desired, object, message) => {
    const r = await post('/convert/crontabs.example.com', review(desired, [object]));
    expect(r.status).toBe(200);
    expect(r.json.response.result.status).toBe('Failed');
    expect(r.json.response.result.message).toContain(message);
  });

  it.each([
    ['malformed JSON', '{"apiVersion":', /not valid JSON/],
    [
      'a wrong kind',
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'AdmissionReview' },
      /expected kind "ConversionReview", got "AdmissionReview"/,
    ],
    [
      'v1beta1',
      { ...review('example.com/v1', []), apiVersion: 'apiextensions.k8s.io/v1beta1' },
      /unsupported ConversionReview apiVersion "apiextensions.k8s.io\/v1beta1"/,
    ],
    [
      'no request',
      { apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview' },
      /has no request/,
    ],
    ['no uid', review('example.com/v1', [], ''), /request.uid is missing/],
    [
      'no desired version',
      { ...review('example.com/v1', []), request: { uid: 'u', objects: [] } },
      /desiredAPIVersion/,
    ],
    [
      'objects not a list',
      {
        ...review('example.com/v1', []),
        request: { uid: 'u', desiredAPIVersion: 'example.com/v1', objects: {} },
      },
      /objects must be a list/,
    ],
    ['an array', [], /must be a JSON ConversionReview object/],
  ])('%s is a 400 Status', async (_what, body, message) => {
    const r = await post('/convert/crontabs.example.com', body);
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest' });
    expect(r.json.message).toMatch(message);
  });

  it('refuses what is not a POST of JSON, and a body over the bound, with a Status', async () => {
    const get = await fetch(`${base}/convert/crontabs.example.com`);
    expect(get.status).toBe(405);
    const text = await post('/convert/crontabs.example.com', '{}', {
      'content-type': 'text/plain',
    });
    expect(text.status).toBe(415);
    const big = await post(
      '/convert/crontabs.example.com',
      review('example.com/v1', [{ data: 'x'.repeat(MAX_CONVERSION_REVIEW_BYTES) }]),
    );
    expect(big.status).toBe(413);
    expect(big.json.kind).toBe('Status');
    expect((await post('/convert/nothing.example.com', review('example.com/v1', []))).status).toBe(
      404,
    );
  });

  it('logs one bounded line of identifiers per review, never the objects', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const srv = createServer(app([crontabs, broken], createLogger('info', sink)).callback());
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const send = (path: string, body: unknown) =>
      fetch(url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const secret = { annotations: { note: 'hunter2' } };
    await send(
      '/convert/crontabs.example.com',
      review('example.com/v1beta1', [
        {
          apiVersion: 'example.com/v1',
          kind: 'CronTab',
          metadata: meta('a', secret),
          time: 'hunter2',
        },
      ]),
    );
    await send(
      '/convert/things.broken.example.com',
      review(
        'broken.example.com/v2',
        [{ apiVersion: 'broken.example.com/v1', kind: 'Thing', metadata: meta('throws', secret) }],
        'x'.repeat(1000),
      ),
    );
    srv.close();
    const entries = lines.map((l) => JSON.parse(l));
    expect(entries.map((e) => e.msg)).toEqual([
      'conversion review',
      'conversion failed',
      'conversion review',
    ]);
    expect(entries[0]).toMatchObject({
      conversion: 'crontabs.example.com',
      uid: 'c0ffee',
      desired: 'example.com/v1beta1',
      objects: 1,
      result: 'success',
    });
    expect(entries[1]).toMatchObject({
      error: 'TypeError',
      why: 'object 0 (ns/throws) from v1 to v2 failed: TypeError',
    });
    expect(entries[2]).toMatchObject({ result: 'failed' });
    expect(entries[2].uid).toMatch(/…\(\+744\)$/);
    for (const l of lines) {
      expect(l).not.toContain('hunter2');
      expect(l.length).toBeLessThan(4096);
    }
  });
});

describe('crdConversion', () => {
  const v = { toHub: (o: KubeObject) => o, fromHub: (o: KubeObject) => o };
  it.each([
    [
      { group: 'example', kind: 'X', plural: 'xs', hub: 'v1', versions: {} },
      /group must be a DNS subdomain/,
    ],
    [
      { group: 'example.com', kind: 'x', plural: 'xs', hub: 'v1', versions: {} },
      /kind must be CamelCase/,
    ],
    [{ group: 'example.com', kind: 'X', plural: 'Xs', hub: 'v1', versions: {} }, /plural must be/],
    [
      { group: 'example.com', kind: 'X', plural: 'xs', hub: 'one', versions: {} },
      /"one" is not a Kubernetes version name/,
    ],
    [
      { group: 'example.com', kind: 'X', plural: 'xs', hub: 'v1', versions: { v1: v } },
      /the hub v1 needs no converter/,
    ],
    [
      {
        group: 'example.com',
        kind: 'X',
        plural: 'xs',
        hub: 'v1',
        versions: { v2: { toHub: v.toHub } },
      },
      /v2 needs toHub and fromHub/,
    ],
    [
      {
        group: 'example.com',
        kind: 'X',
        plural: 'xs',
        hub: 'v1',
        versions: {},
        crd: {
          versions: [
            { name: 'v1', storage: true, schema: { openAPIV3Schema: {} } },
            { name: 'v2', storage: false, schema: { openAPIV3Schema: {} } },
          ],
        },
      },
      /the CRD's version v2 has no converter/,
    ],
  ])('refuses a declaration it cannot serve (%#)', (init, message) => {
    expect(() => crdConversion(init as never)).toThrow(message);
  });
});
