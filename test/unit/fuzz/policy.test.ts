// Fuzz: the policy compiler. The demo policies (and a few that use every rule type),
// mutated with hostile JSON and with what policies are made of (JSONPaths with filters,
// JSON Schemas, kinds, selectors). compilePolicy returns a CompiledPolicy or throws a
// PolicyCompileError (what kubectl shows when annex's webhook refuses the policy); what
// compiles, compiles to CEL objects or a reason, is explained, and evaluates a request
// without throwing. No filter expression reaches a prototype.
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AdmissionRequest } from '../../../src/admission/review.js';
import { celStatus, compileToCel, explainCel } from '../../../src/policy/cel/index.js';
import { compilePolicy } from '../../../src/policy/compile.js';
import { evaluate } from '../../../src/policy/evaluate.js';
import { PolicyCompileError } from '../../../src/policy/types.js';
import {
  expandDeep,
  expectUnpolluted,
  guard,
  mutate,
  mutationOf,
  options,
  returnsOrRefuses,
  runsOf,
  SEED,
  timeoutFor,
  value,
  type Json,
} from './fuzz.js';

const RUNS = runsOf(3_000);

const policy = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name, generation: 3 },
  spec,
});
const SEEDS: any[] = [
  ...readdirSync('policies').map((f) => parse(readFileSync(`policies/${f}`, 'utf8'))),
  policy('every-rule', {
    match: {
      kinds: ['Pod', 'apps/Deployment'],
      operations: ['CREATE', 'UPDATE'],
      namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] },
      objectSelector: { matchLabels: { app: 'web' } },
    },
    exclude: { resources: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'] }] },
    actions: ['Warn', 'Audit'],
    failurePolicy: 'Ignore',
    validate: [
      { name: 'owner', path: '$.metadata.labels.owner', required: true, message: 'needs an owner' },
      { name: 'no-priv', path: '$..securityContext.privileged', forbidden: true },
      { name: 'dns', path: '$.metadata.name', nameRule: 'dns1123Subdomain' },
      {
        name: 'filter',
        path: "$..containers[?(@.name == 'app')].image",
        schema: { type: 'string', minLength: 1 },
      },
    ],
    mutate: [
      { name: 'tier', path: '$.metadata.labels', setIfAbsent: { tier: 'web' } },
      { name: 'pods', path: '$.spec.template', podTemplateDefaults: true },
    ],
  }),
];

/** What policies are made of, to set anywhere in one. */
const policyValue: fc.Arbitrary<Json> = fc.oneof(
  value,
  fc.constantFrom(
    '$',
    '$..',
    '$.spec.[',
    '$..*',
    '$..containers[*].image',
    '$..[?(@.constructor)]',
    '$..[?(@.constructor.prototype.polluted = 1)]',
    "$..[?(@.__proto__['polluted'] = 1)]",
    '$..[?(this.constructor.constructor("return process")())]',
    '$[?(@property === "__proto__")]',
    '$.a[?(@.b ==',
    '$[(@.length-1)]',
    '$..name^',
    '$.metadata.labels[app.kubernetes.io/name]',
    'apps/Deployment',
    '*',
    'v1/Pod',
    'apps/*',
    'Deny',
    'Warn',
    'Audit',
    'Fail',
    'Ignore',
    'dns1123Label',
    'Exists',
  ),
  fc.constantFrom<Json>(
    { type: 'string', pattern: '^(a+)+$' },
    { $ref: '#/definitions/x' },
    { $ref: 'http://127.0.0.1:1/schema' },
    { type: 'object', properties: { __proto__: { const: 1 } } },
    { not: {} },
    { format: 'email' },
    { oneOf: [{}, {}] },
    { key: 'k', operator: 'In', values: [] },
    ['CREATE', '*'],
    ['Deny', 'Warn'],
    [{ apiGroups: ['*'], resources: ['*/*'] }],
  ),
);
const mutation = mutationOf(policyValue);

const request = (object: unknown, kind = 'Deployment'): AdmissionRequest => ({
  uid: 'u',
  kind: { group: kind === 'Pod' ? '' : 'apps', version: 'v1', kind },
  resource: {
    group: kind === 'Pod' ? '' : 'apps',
    version: 'v1',
    resource: `${kind.toLowerCase()}s`,
  },
  namespace: 'shop',
  name: 'web',
  operation: 'CREATE',
  object: object as AdmissionRequest['object'],
});
const containers = [{ name: 'app', image: 'nginx:latest', securityContext: { privileged: true } }];
const REQUESTS = [
  request({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'Web_', labels: { app: 'web' } },
    spec: { template: { metadata: {}, spec: { hostNetwork: true, containers } } },
  }),
  request({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers } }, 'Pod'),
];

describe(`fuzz: ${RUNS} mutated AdmissionPolicies (seed ${SEED})`, () => {
  it(
    'compile or refuse with a PolicyCompileError; what compiles converts, explains and evaluates',
    () => {
      const run = (p: any) => {
        const c = compilePolicy(p);
        return JSON.stringify([compileToCel(c), REQUESTS.map((r) => evaluate([c], r))]);
      };
      const before = SEEDS.map(run);
      const watch = guard();
      const tally = { ok: 0, refused: 0 };
      const inputs = fc.tuple(
        fc.nat({ max: SEEDS.length - 1 }),
        // Few changes, so that a fair share still compiles and goes on to CEL and evaluation.
        fc.array(mutation, { minLength: 1, maxLength: 2 }),
        fc.boolean(),
      );
      fc.assert(
        fc.property(inputs, ([seed, ms, viaJson]) => {
          const holder = { policy: structuredClone(SEEDS[seed]) };
          for (const m of ms) mutate(holder, 'policy', holder.policy, 'spec', m);
          // Through JSON, as the API server hands it over: deep nesting written out.
          const obj = viaJson
            ? JSON.parse(expandDeep(JSON.stringify(holder.policy) ?? 'null'))
            : holder.policy;
          const compiled = returnsOrRefuses(() => compilePolicy(obj), PolicyCompileError, tally);
          if (compiled) {
            const cel = compileToCel(compiled);
            expect(typeof JSON.stringify(cel)).toBe('string');
            expect(['ValidatingAdmissionPolicy', 'webhook']).toContain(
              celStatus(compiled).enforcedBy,
            );
            explainCel(compiled);
            for (const r of REQUESTS) {
              const e = evaluate([compiled], r);
              expect(typeof e).toBe('object');
            }
          }
          expectUnpolluted();
        }),
        options(RUNS),
      );
      watch.check();
      expect(SEEDS.map(run)).toEqual(before);
      console.log(
        `fuzz: policy compiler: ${RUNS} policies, ${tally.ok} compiled, ${tally.refused} refused`,
      );
      expect(tally.ok).toBeGreaterThan(0);
      expect(tally.refused).toBeGreaterThan(0);
    },
    timeoutFor(RUNS, 2),
  );
});
