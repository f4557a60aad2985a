// Fuzz: mutated AdmissionReviews through the real app (createApp + the configured
// webhooks, the policies of policies/ loaded) on loopback: the built-in webhooks, the
// policy webhooks and the check of AdmissionPolicy objects. Whatever the mutation, the
// answer is never a 5xx, a review is answered with its own uid, any other answer is a
// Status with the HTTP code, and no log line carries a value from the object: every
// value in the seeds and mutations holds the marker, except the identifiers annex does
// log (uid, kind, namespace, name), which are kept marker-free. Afterwards the valid
// seeds are answered exactly as before: no state, no prototype, was changed.
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { reviewOf, startAdmissionApp, type AdmissionApp } from '../admission-app.js';
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

const RUNS = runsOf(6_000);
const PATHS = [
  '/mutate/defaults.annex.dev',
  '/validate/names.annex.dev',
  '/validate/policies.annex.dev',
  '/mutate/policies.annex.dev',
  '/validate/admissionpolicies.annex.dev',
];

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
  // The demo policies, for the webhook that checks AdmissionPolicy objects.
  ...readdirSync('policies').map((file): (typeof SEEDS)[number] => [
    { group: 'policy.annex.dev', version: 'v1alpha1', kind: 'AdmissionPolicy' },
    parse(readFileSync(`policies/${file}`, 'utf8')),
  ]),
];

const caseArb = fc.record({
  seed: fc.nat({ max: SEEDS.length - 1 }),
  path: fc.constantFrom(...PATHS),
  operation: fc.constantFrom('CREATE', 'CREATE', 'UPDATE', 'DELETE'),
  mutations: fc.array(mutation, { minLength: 1, maxLength: 4 }),
  truncateAt: truncation,
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

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

/** AdmissionPolicies are cluster-scoped, and their plural is not the kind's + "s". */
const POLICY_RESOURCE = {
  resource: { group: 'policy.annex.dev', version: 'v1alpha1', resource: 'admissionpolicies' },
  namespace: '',
};

function seedReview(seed: number, operation: string): any {
  const [kind, object] = SEEDS[seed]!;
  return reviewOf(structuredClone(kind), structuredClone(object), {
    ...(kind.kind === 'AdmissionPolicy' ? structuredClone(POLICY_RESOURCE) : {}),
    operation,
    ...(operation === 'UPDATE' ? { oldObject: structuredClone(object) } : {}),
  });
}

function render(c: Case): { text: string; uid: unknown } {
  const review = seedReview(c.seed, c.operation);
  for (const m of c.mutations) mutate(review, 'request', review.request, 'object', m);
  clearIdentifiers(review);
  const text = truncate(expandDeep(JSON.stringify(review)), c.truncateAt);
  return { text, uid: review?.request?.uid };
}

let app: AdmissionApp;
beforeAll(async () => {
  app = await startAdmissionApp({}, { policies: true });
});
afterAll(() => app.close());

/** Every path's answer to every seed as it is. */
async function seedAnswers(): Promise<string[]> {
  const out: string[] = [];
  for (const path of PATHS)
    for (const i of SEEDS.keys()) out.push((await app.post(path, seedReview(i, 'CREATE'))).text);
  return out;
}

describe(`fuzz: ${RUNS} mutated AdmissionReviews (seed ${SEED})`, () => {
  it(
    'never answer 5xx, answer reviews with their uid, and never log object values',
    async () => {
      const before = await seedAnswers();
      const watch = guard();
      const codes = new Map<number, number>();
      const denied = new Set<string>();
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
            if (!r.json.response.allowed) denied.add(c.path);
          } else {
            expect(r.json).toMatchObject({ kind: 'Status', code: r.status });
          }
          const written = app.lines.splice(from);
          for (const line of written) {
            expect(line).not.toContain(MARK);
            expect(line.length).toBeLessThan(4096);
          }
          checkedLines += written.length;
          expectUnpolluted();
        }),
        options(RUNS),
      );
      watch.check();
      expect(await seedAnswers()).toEqual(before);
      console.log(
        `fuzz: ${RUNS} reviews, status codes ${JSON.stringify(Object.fromEntries(codes))}`,
      );
      // The run must have exercised both paths: answered reviews and refused envelopes.
      expect(codes.get(200) ?? 0).toBeGreaterThan(RUNS / 2);
      expect(codes.get(400) ?? 0).toBeGreaterThan(0);
      expect(checkedLines).toBeGreaterThanOrEqual(RUNS);
      // Every webhook decided (denied some), not merely parsed the envelope.
      expect([...denied].sort()).toEqual([...PATHS].sort());
    },
    timeoutFor(RUNS, 1),
  );
});
