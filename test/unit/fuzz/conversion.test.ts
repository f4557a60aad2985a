// Fuzz: mutated ConversionReviews through the real app (createApp with the CronTab
// conversion of examples/crontab) on loopback. Whatever the mutation, the answer is a
// ConversionReview with the request's uid (every object converted, or a Failed result)
// or a Status with the HTTP code, never a 5xx, and no log line carries a value from
// the objects. Afterwards the valid seeds are answered exactly as before.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crontabs, TIME_ANNOTATION } from '../../../examples/crontab/feature.js';
import { conversionPath } from '../../../src/conversion/declare.js';
import { startAdmissionApp, type AdmissionApp } from '../admission-app.js';
import {
  expandDeep,
  expectUnpolluted,
  guard,
  isContainer,
  MARK,
  mutate,
  mutation,
  options,
  runsOf,
  SEED,
  timeoutFor,
  truncate,
  truncation,
} from './fuzz.js';

const RUNS = runsOf(3_000);
const PATH = conversionPath(crontabs);
const UID = '7c1a7a3e-0000-4000-8000-00000000c0de';

const crontab = (version: string, name: string, extra: Record<string, unknown>) => ({
  apiVersion: `example.com/${version}`,
  kind: 'CronTab',
  metadata: {
    name,
    namespace: 'ns',
    uid: 'b1e5c0de-0000-4000-8000-000000000002',
    resourceVersion: '42',
    labels: { app: `${MARK}label` },
    finalizers: ['example.com/keep'],
    ...extra,
  },
  host: `${MARK}host`,
  port: `${MARK}port`,
});
const OBJECTS = [
  crontab('v1beta1', 'old', { annotations: { [TIME_ANNOTATION]: `${MARK}time`, a: `${MARK}a` } }),
  { ...crontab('v1', 'new', {}), time: `${MARK}time` },
  crontab('v1beta1', 'plain', {}),
];
const seedReview = (desired: string, objects: number[]): any => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'ConversionReview',
  request: {
    uid: UID,
    desiredAPIVersion: `example.com/${desired}`,
    objects: objects.map((i) => structuredClone(OBJECTS[i])),
  },
});

const caseArb = fc.record({
  desired: fc.constantFrom('v1', 'v1beta1'),
  objects: fc.array(fc.nat({ max: OBJECTS.length - 1 }), { minLength: 1, maxLength: 4 }),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
  truncateAt: truncation,
});

/** annex logs these as identifiers: keep them free of the marker. */
function clearIdentifiers(review: any) {
  const r = review?.request;
  if (!isContainer(r)) return;
  const clean = (o: any, k: string) => {
    if (isContainer(o) && typeof o[k] === 'string') o[k] = o[k].replaceAll(MARK, 'ident-');
  };
  clean(r, 'uid');
  clean(r, 'desiredAPIVersion');
  for (const o of Array.isArray(r.objects) ? r.objects : []) {
    clean(o, 'kind');
    clean(o, 'apiVersion');
    if (isContainer(o)) for (const k of ['name', 'namespace']) clean(o.metadata, k);
  }
}

let app: AdmissionApp;
beforeAll(async () => {
  app = await startAdmissionApp({}, { conversions: [crontabs] });
});
afterAll(() => app.close());

const seedAnswers = async () =>
  Promise.all(
    ['v1', 'v1beta1'].map(async (v) => (await app.post(PATH, seedReview(v, [0, 1, 2]))).text),
  );

describe(`fuzz: ${RUNS} mutated ConversionReviews (seed ${SEED})`, () => {
  it(
    'answer a review with its uid or a Status, never 5xx, never an object value in a log',
    async () => {
      const before = await seedAnswers();
      expect(before.map((t) => JSON.parse(t).response.result.status)).toEqual([
        'Success',
        'Success',
      ]);
      const watch = guard();
      const outcomes = new Map<string, number>();
      await fc.assert(
        fc.asyncProperty(caseArb, async (c) => {
          const review = seedReview(c.desired, c.objects);
          for (const m of c.mutations) mutate(review, 'request', review.request, 'objects', m);
          clearIdentifiers(review);
          const text = truncate(expandDeep(JSON.stringify(review)), c.truncateAt);
          const from = app.lines.length;
          const r = await app.post(PATH, text);
          let outcome = String(r.status);
          expect(r.status).toBeLessThan(500);
          if (r.status === 200) {
            expect(r.json).toMatchObject({
              apiVersion: 'apiextensions.k8s.io/v1',
              kind: 'ConversionReview',
            });
            expect(r.json.response.uid).toBe(review.request.uid);
            const { result, convertedObjects } = r.json.response;
            outcome = result.status;
            if (result.status === 'Success')
              expect(convertedObjects).toHaveLength(review.request.objects.length);
            else expect(result).toEqual({ status: 'Failed', message: expect.any(String) });
          } else {
            expect(r.json).toMatchObject({ kind: 'Status', code: r.status });
          }
          outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
          for (const line of app.lines.splice(from)) {
            expect(line).not.toContain(MARK);
            expect(line.length).toBeLessThan(4096);
          }
          expectUnpolluted();
        }),
        options(RUNS),
      );
      watch.check();
      expect(await seedAnswers()).toEqual(before);
      console.log(
        `fuzz: ${RUNS} conversion reviews, ${JSON.stringify(Object.fromEntries(outcomes))}`,
      );
      for (const o of ['Success', 'Failed', '400']) expect(outcomes.get(o) ?? 0).toBeGreaterThan(0);
    },
    timeoutFor(RUNS, 3),
  );
});
