// Fuzz: mutated AdmissionReviews through the real app (createApp + the configured
// webhooks) on loopback. Whatever the mutation, the answer is never a 5xx, a review
// is answered with its own uid, and no log line carries a value from the object:
// every value in the seeds and mutations holds the marker "SECRET-", except the
// identifiers annex does log (uid, kind, namespace, name), which are kept marker-free.
// ANNEX_FUZZ_RUNS (default 25,000) and ANNEX_FUZZ_SEED change volume and seed;
// `npm run fuzz` runs 250,000.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reviewOf, startAdmissionApp, type AdmissionApp } from './admission-app.js';

const RUNS = Number(process.env.ANNEX_FUZZ_RUNS ?? 25_000);
const SEED = Number(process.env.ANNEX_FUZZ_SEED ?? 8);
const MARK = 'SECRET-';
const PATHS = ['/mutate/defaults', '/validate/names'];

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const container = (name: string) => ({
  name,
  image: `${MARK}registry/app:1`,
  env: [
    { name: 'TOKEN', value: `${MARK}env` },
    { name: 'CM', valueFrom: { configMapKeyRef: { name: 'cm', key: `${MARK}key` } } },
  ],
  envFrom: [{ secretRef: { name: 'creds' } }],
});
const podSpec = () => ({
  serviceAccountName: 'robot',
  containers: [container('app')],
  initContainers: [container('init')],
  volumes: [
    { name: 'v', configMap: { name: 'cm' } },
    { name: 's', secret: { secretName: 'sec' } },
  ],
});
const meta = (name: string) => ({
  name,
  labels: { app: `${MARK}label`, [`${MARK}key`]: 'v' },
  annotations: { note: `${MARK}annotation` },
});
const SEEDS: [{ group: string; version: string; kind: string }, unknown][] = [
  [
    { group: '', version: 'v1', kind: 'Pod' },
    { metadata: meta('web'), spec: podSpec() },
  ],
  [
    { group: 'apps', version: 'v1', kind: 'Deployment' },
    {
      metadata: meta('web'),
      spec: { replicas: 2, template: { metadata: meta(''), spec: podSpec() } },
    },
  ],
  [
    { group: 'batch', version: 'v1', kind: 'CronJob' },
    {
      metadata: meta('nightly'),
      spec: { schedule: '0 0 * * *', jobTemplate: { spec: { template: { spec: podSpec() } } } },
    },
  ],
  [
    { group: '', version: 'v1', kind: 'ConfigMap' },
    { metadata: meta('cm'), data: { k: `${MARK}data` } },
  ],
  [
    { group: 'example.com', version: 'v1', kind: 'Widget' },
    {
      // Opted in, so the custom-resource registration of the defaults webhook matches it.
      metadata: {
        ...meta('w'),
        labels: { ...meta('w').labels, 'annex.dev/pod-defaults': 'enabled' },
      },
      spec: { jobs: [{ template: { metadata: {}, spec: podSpec() } }] },
    },
  ],
];

/** Stands for an object nested `levels` deep, written as text (JSON.stringify gives up at ~5,000). */
const DEEP = '\u0000deep\u0000';

const marked = fc.string({ maxLength: 12 }).map((s) => `${MARK}${s}`);
const awkwardKey = fc.constantFrom(
  'toString',
  'valueOf',
  '__proto__',
  'constructor',
  'name',
  'labels',
  'metadata',
  'spec',
  'containers',
  'template',
  '',
);
const scalar: fc.Arbitrary<Json> = fc.oneof(
  marked,
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => `${MARK}${s}`),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.nat({ max: 4000 }).map((n) => `${MARK}${'Ab_é\t'.repeat(n)}`),
);
const value: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  {
    weight: 3,
    arbitrary: fc.dictionary(fc.oneof(awkwardKey, marked), scalar, {
      maxKeys: 4,
    }) as fc.Arbitrary<Json>,
  },
  { weight: 2, arbitrary: fc.array(scalar, { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(100, 999, 1001, 3200, 6000, 20_000)
      .chain((n) => fc.constantFrom(`${DEEP}{${n}`, `${DEEP}[${n}`)),
  },
);

/** One change: walk `steps` from a start (the review or its object), then act there. */
const mutation = fc.record({
  // Mostly inside the object; one change in five anywhere in the review.
  fromRoot: fc.oneof(
    { weight: 1, arbitrary: fc.constant(true) },
    { weight: 4, arbitrary: fc.constant(false) },
  ),
  steps: fc.array(fc.nat(), { maxLength: 7 }),
  action: fc.oneof(
    fc.record({ kind: fc.constant('set' as const), value }),
    fc.record({ kind: fc.constant('delete' as const) }),
    fc.record({ kind: fc.constant('add' as const), key: fc.oneof(awkwardKey, marked), value }),
  ),
});
const caseArb = fc.record({
  seed: fc.nat({ max: SEEDS.length - 1 }),
  path: fc.constantFrom(...PATHS),
  operation: fc.constantFrom('CREATE', 'CREATE', 'UPDATE', 'DELETE'),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
  // One review in 20 is cut short: no longer JSON.
  truncateAt: fc.oneof(
    { weight: 19, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.nat() },
  ),
});

// `any`: the walk indexes maps and lists alike.
const isContainer = (v: unknown): v is any => typeof v === 'object' && v !== null;

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

function mutate(review: Record<string, any>, m: Mutation) {
  let parent: any = m.fromRoot ? review : review.request;
  if (!isContainer(parent)) return;
  let key: string | number = m.fromRoot ? 'request' : 'object';
  for (const step of m.steps) {
    const here: unknown = parent[key];
    if (!isContainer(here)) break;
    const keys: (string | number)[] = Array.isArray(here)
      ? here.map((_, i) => i)
      : Object.keys(here);
    if (!keys.length) break;
    parent = here;
    key = keys[step % keys.length]!;
  }
  const a = m.action;
  if (a.kind === 'set') parent[key] = a.value;
  else if (a.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(key), 1);
    else delete parent[key];
  } else {
    const here: unknown = parent[key];
    if (isContainer(here) && !Array.isArray(here))
      Object.defineProperty(here, a.key, {
        value: a.value,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else parent[key] = a.value;
  }
}

/** annex logs these as identifiers: keep them free of the marker, whatever the mutations did. */
function clearIdentifiers(review: any) {
  const r: any = review?.request;
  if (!isContainer(r)) return;
  const clean = (o: any, k: string) => {
    if (isContainer(o) && typeof o[k] === 'string') o[k] = o[k].replaceAll(MARK, 'ident-');
  };
  for (const k of ['uid', 'name', 'namespace', 'operation']) clean(r, k);
  clean(r.kind, 'kind');
  clean(r.object, 'name');
  if (isContainer(r.object)) clean((r.object as any).metadata, 'name');
}

function render(c: Case): { text: string; uid: unknown } {
  const [kind, object] = SEEDS[c.seed]!;
  const review: any = reviewOf(structuredClone(kind), structuredClone(object), {
    operation: c.operation,
    ...(c.operation === 'UPDATE' ? { oldObject: structuredClone(object) } : {}),
  });
  for (const m of c.mutations) mutate(review, m);
  clearIdentifiers(review);
  let text = JSON.stringify(review).replace(/"\\u0000deep\\u0000([{[])(\d+)"/g, (_, open, n) => {
    const levels = Number(n);
    return open === '{'
      ? '{"a":'.repeat(levels) + `"${MARK}deep"` + '}'.repeat(levels)
      : '['.repeat(levels) + `"${MARK}deep"` + ']'.repeat(levels);
  });
  if (c.truncateAt !== null) text = text.slice(0, c.truncateAt % (text.length + 1));
  return { text, uid: review?.request?.uid };
}

let app: AdmissionApp;
beforeAll(async () => {
  app = await startAdmissionApp();
});
afterAll(() => app.close());

describe(`fuzz: ${RUNS} mutated AdmissionReviews (seed ${SEED})`, () => {
  it('never answer 5xx, answer reviews with their uid, and never log object values', async () => {
    const codes = new Map<number, number>();
    let checkedLines = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const { text, uid } = render(c);
        const from = app.lines.length;
        const r = await app.post(c.path, text);
        codes.set(r.status, (codes.get(r.status) ?? 0) + 1);
        expect(r.status).toBeLessThan(500);
        if (r.status === 200) {
          expect(r.json.kind).toBe('AdmissionReview');
          expect(r.json.response.uid).toBe(uid);
        } else {
          expect(r.json).toMatchObject({ kind: 'Status', code: r.status });
        }
        const written = app.lines.splice(from);
        for (const line of written) {
          expect(line).not.toContain(MARK);
          expect(line.length).toBeLessThan(4096);
        }
        checkedLines += written.length;
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: false },
    );
    console.log(`fuzz: ${RUNS} reviews, status codes ${JSON.stringify(Object.fromEntries(codes))}`);
    // The run must have exercised both paths: answered reviews and refused envelopes.
    expect(codes.get(200) ?? 0).toBeGreaterThan(RUNS / 2);
    expect(codes.get(400) ?? 0).toBeGreaterThan(0);
    expect(checkedLines).toBeGreaterThanOrEqual(RUNS);
  }, 300_000);
});
