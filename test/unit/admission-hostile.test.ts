// Issue 8, admission half: objects of unexpected shape, values in the error log, and
// unbounded log lines, each sent through the real app (createApp + the configured
// webhooks) as the API server would send it. Every object carries a marker value that
// must never reach the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewOf, startAdmissionApp, type AdmissionApp } from './admission-app.js';

const POD = { group: '', version: 'v1', kind: 'Pod' };
const DEPLOYMENT = { group: 'apps', version: 'v1', kind: 'Deployment' };
const MARK = 'SECRET-LABEL-CONTENT';

let app: AdmissionApp;
beforeAll(async () => {
  app = await startAdmissionApp();
});
afterAll(() => app.close());

/** Posts, then checks the log written meanwhile never carries the marker. */
async function send(path: string, body: string | object) {
  const from = app.lines.length;
  const r = await app.post(path, body);
  const written = app.lines.slice(from);
  expect(written.join('\n')).not.toContain('SECRET-');
  return { ...r, written };
}

/** A review answered with a review (HTTP 200, same uid), never an HTTP error. */
function answered(r: { status: number; json: any }) {
  expect(r.status).toBe(200);
  expect(r.json).toMatchObject({ kind: 'AdmissionReview', response: { uid: expect.any(String) } });
  return r.json.response;
}

const pod = (metadata: unknown) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata,
  spec: { containers: [{ name: 'c', image: 'nginx', env: [{ name: 'X', value: MARK }] }] },
});

describe('defaults webhook: objects of unexpected shape are answered, not a 500', () => {
  it('an object without metadata gets metadata with the managed-by label', async () => {
    const res = answered(await send('/mutate/defaults.annex.dev', reviewOf(POD, {})));
    expect(res.allowed).toBe(true);
    const ops = JSON.parse(Buffer.from(res.patch, 'base64').toString());
    expect(ops).toContainEqual({
      op: 'add',
      path: '/metadata',
      value: { labels: { 'app.kubernetes.io/managed-by': 'annex' } },
    });
  });

  it.each([MARK, 7, true, [MARK]])('metadata %j is denied 422 naming metadata', async (m) => {
    const res = answered(await send('/mutate/defaults.annex.dev', reviewOf(POD, pod(m))));
    expect(res.allowed).toBe(false);
    expect(res.status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(res.status.details.causes).toEqual([
      expect.objectContaining({ field: 'metadata', reason: 'FieldValueInvalid' }),
    ]);
    expect(JSON.stringify(res.status)).not.toContain(MARK);
  });

  it.each([
    [MARK, 'string'],
    [7, 'integer'],
    [false, 'boolean'],
    [[MARK], 'array'],
  ])('metadata.labels %j is denied 422 naming metadata.labels (%s)', async (labels, type) => {
    const res = answered(
      await send('/mutate/defaults.annex.dev', reviewOf(POD, pod({ name: 'p', labels }))),
    );
    expect(res.allowed).toBe(false);
    expect(res.status).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(res.status.message).toBe(
      `Pod "p" is invalid: metadata.labels: Invalid value: "${type}": metadata.labels in body must be of type object: "${type}"`,
    );
  });

  it('a container named by an object is defaulted and its warning names it by position', async () => {
    const obj = pod({ name: 'p' });
    obj.spec.containers[0]!.name = { toString: MARK } as never;
    const res = answered(await send('/mutate/defaults.annex.dev', reviewOf(POD, obj)));
    expect(res.allowed).toBe(true);
    expect(res.warnings).toEqual([
      'annex: container spec.containers[0] had no cpu/memory request; defaulted to cpu=100m, memory=128Mi',
    ]);
  });
});

describe('names webhook: objects of unexpected shape are answered, not a 500', () => {
  it.each([42, { v: MARK }, [MARK], true])(
    'request.name %j is a malformed review: 400 naming request.name',
    async (name) => {
      const r = await send(
        '/validate/names.annex.dev',
        reviewOf(DEPLOYMENT, { metadata: { name: 'web' } }, { name }),
      );
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400 });
      expect(r.json.message).toContain('request.name');
    },
  );

  it.each([42, { v: MARK }, [MARK], true])(
    'metadata.name %j is denied 422 naming metadata.name',
    async (name) => {
      const res = answered(
        await send('/validate/names.annex.dev', reviewOf(DEPLOYMENT, { metadata: { name } })),
      );
      expect(res.allowed).toBe(false);
      expect(res.status).toMatchObject({ code: 422, reason: 'Invalid' });
      expect(res.status.details.causes).toEqual([
        expect.objectContaining({ field: 'metadata.name', reason: 'FieldValueInvalid' }),
      ]);
      expect(JSON.stringify(res.status)).not.toContain(MARK);
    },
  );

  it.each([{}, { metadata: MARK }, { metadata: 3 }, { metadata: { labels: MARK } }])(
    'object %j where the rule does not apply (a ConfigMap) is allowed',
    async (object) => {
      const kind = { group: '', version: 'v1', kind: 'ConfigMap' };
      const res = answered(await send('/validate/names.annex.dev', reviewOf(kind, object)));
      expect(res.allowed).toBe(true);
    },
  );

  it.each([{ toString: MARK }, [MARK], 5])(
    'a container or reference named by %j is allowed (no name rule applies to it)',
    async (name) => {
      const obj = pod({ name: 'p' });
      (obj.spec as any).containers[0].name = name;
      (obj.spec as any).serviceAccountName = name;
      (obj.spec as any).volumes = [{ name, configMap: { name } }];
      const res = answered(await send('/validate/names.annex.dev', reviewOf(POD, obj)));
      expect(res.allowed).toBe(true);
    },
  );
});

describe('objects nested deeper than annex evaluates', () => {
  // Built as text: JSON.stringify itself gives up near 5,000 levels.
  const deep = (levels: number, kind = POD, inner = `"${MARK}"`) =>
    JSON.stringify(reviewOf(kind, { metadata: { name: 'p' }, spec: '@@' })).replace(
      '"@@"',
      '{"a":'.repeat(levels) + inner + '}'.repeat(levels),
    );

  it.each(['/mutate/defaults.annex.dev', '/validate/names.annex.dev'])(
    '%s denies 3,200 levels with a 400 naming request.object',
    async (path) => {
      const res = answered(await send(path, deep(3200)));
      expect(res.allowed).toBe(false);
      expect(res.status).toMatchObject({ code: 400, reason: 'BadRequest' });
      expect(res.status.message).toContain('request.object');
      expect(res.status.message).toMatch(/nested more than \d+ levels deep/);
    },
  );

  it('a deep array in oldObject is named as request.oldObject', async () => {
    const body = JSON.stringify(
      reviewOf(POD, pod({ name: 'p' }), { operation: 'UPDATE', oldObject: { spec: '@@' } }),
    ).replace('"@@"', '['.repeat(100_000) + ']'.repeat(100_000));
    const res = answered(await send('/mutate/defaults.annex.dev', body));
    expect(res.status).toMatchObject({ code: 400 });
    expect(res.status.message).toContain('request.oldObject');
  });

  it('100 levels are evaluated as usual', async () => {
    const res = answered(await send('/mutate/defaults.annex.dev', deep(100)));
    expect(res.allowed).toBe(true);
  });
});

describe('log lines: identifiers only, each field bounded', () => {
  it('a 1 MiB name, namespace and uid give an info line under 2 KB', async () => {
    const long = 'a'.repeat(1 << 20);
    const r = await send(
      '/validate/names.annex.dev',
      reviewOf(POD, pod({ name: long }), { name: long, namespace: long, uid: long }),
    );
    const res = answered(r);
    expect(res.allowed).toBe(false);
    const line = r.written.find((l) => l.includes('"admission review"'));
    expect(line).toBeDefined();
    expect(line!.length).toBeLessThan(2048);
    expect(JSON.parse(line!).name).toMatch(/^a{256}…\(\+1048320\)$/);
    for (const l of r.written) expect(l.length).toBeLessThan(2048);
  });

  it('the access log bounds the path', async () => {
    const from = app.lines.length;
    await fetch(`${app.base}/validate/${'x'.repeat(10_000)}`, { method: 'POST' });
    const written = app.lines.slice(from);
    expect(written.length).toBeGreaterThan(0);
    for (const l of written) expect(l.length).toBeLessThan(2048);
  });
});
