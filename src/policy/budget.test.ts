// What a policy costs is bounded whatever the object holds: patterns run in linear time
// (or, needing backtracking, on short values and in shapes that cannot explode), filter
// expressions cannot call methods, and a rule the time budget leaves no room for fails
// per its policy's failurePolicy instead of delaying the answer.
import { describe, expect, it } from 'vitest';
import { configMapRequest } from '../../test/unit/configmap-request.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { PolicyCompileError } from './types.js';
import { OUT_OF_COST } from './cost.js';
import { evaluate, OUT_OF_TIME } from './evaluate.js';
import { BACKTRACKING_MAX_INPUT, exponentialShape } from './linear-regexp.js';

function policy(spec: Record<string, unknown>, name = 'p'): CompiledPolicy {
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: { match: { kinds: ['ConfigMap'] }, ...spec },
  });
}

const onValue = (pattern: string, failurePolicy = 'Fail') =>
  policy({
    failurePolicy,
    validate: [{ name: 'v', path: '$.data.v', schema: { type: 'string', pattern } }],
  });

const request = (v: string) => configMapRequest({ v });

const timed = <T>(f: () => T): [T, number] => {
  const t0 = performance.now();
  const r = f();
  return [r, performance.now() - t0];
};

describe('JSON Schema patterns', () => {
  it('a catastrophic-backtracking pattern answers at once (ECMAScript: about 2^26 steps)', () => {
    const p = onValue('^(a+)+$');
    const [e, ms] = timed(() => evaluate([p], request(`${'a'.repeat(26)}!`)));
    expect(e.allowed).toBe(false);
    expect(ms).toBeLessThan(500);
    expect(evaluate([p], request('a'.repeat(26))).allowed).toBe(true);
    // A 1 MiB value is matched in linear time too.
    const [big, bigMs] = timed(() => evaluate([p], request(`${'a'.repeat(1 << 20)}!`)));
    expect(big.allowed).toBe(false);
    expect(bigMs).toBeLessThan(2000);
  });

  it('keeps ECMAScript meaning where RE2 reads a pattern alike', () => {
    // `.` never matches \r in ECMAScript; RE2's own `.` would.
    expect(evaluate([onValue('^a.b$')], request('a\rb')).allowed).toBe(false);
    expect(evaluate([onValue('^a.b$')], request('a-b')).allowed).toBe(true);
    expect(evaluate([onValue('^\\d{3}$')], request('123')).allowed).toBe(true);
    expect(evaluate([onValue('^\\p{Lu}')], request('Ärger')).allowed).toBe(true);
  });

  it('runs a lookaround on the backtracking engine, on values of bounded length only', () => {
    const p = onValue('^[^@]*:(?!latest$)[^:/@]+$');
    expect(evaluate([p], request('nginx:1.27')).allowed).toBe(true);
    expect(evaluate([p], request('nginx:latest')).allowed).toBe(false);
    const long = evaluate([p], request(`${'x'.repeat(BACKTRACKING_MAX_INPUT)}:1`));
    expect(long.allowed).toBe(false);
    expect(long.status?.details?.causes?.[0]?.message).toContain(
      `longer than the ${BACKTRACKING_MAX_INPUT}`,
    );
    // failurePolicy Ignore: the rule that cannot be evaluated is skipped.
    const ignore = onValue('^[^@]*:(?!latest$)[^:/@]+$', 'Ignore');
    expect(evaluate([ignore], request(`${'x'.repeat(5000)}:1`)).allowed).toBe(true);
  });

  it.each([
    ['^(?!x)(a+)+$', true],
    ['^(?!x)(a|aa)*$', true],
    ['^(?!x)(?:a?)+$', true],
    ['(a)\\1(b+){2,}', true],
    ['^[^@]*:(?!latest$)[^:/@]+$|@sha256:[0-9a-f]{64}$', false],
    ['^(?!x)(ab){3}(c+)$', false],
    ['^(?!x)[(a+)+]*$', false],
  ])('exponentialShape(%s): %s', (pattern, refused) => {
    expect(exponentialShape(pattern) !== undefined).toBe(refused);
  });

  it('refuses a backtracking-only pattern of exponential shape when the policy compiles', () => {
    expect(() => onValue('^(?!x)(a+)+$')).toThrow(PolicyCompileError);
    expect(() => onValue('^(?!x)(a+)+$')).toThrow(/can take exponential time/);
  });
});

describe('JSONPath filter expressions', () => {
  it.each([
    "$.data[?(@.match('(a+)+$'))]",
    '$.data[?(@.repeat(1000000000).length > 1)]',
    '$.spec.containers[?(@.name.startsWith("x"))].image',
  ])('refuses calls: %s', (path) => {
    expect(() => policy({ validate: [{ name: 'r', path, required: true }] })).toThrow(
      /calls are not allowed/,
    );
  });

  it('still allows comparisons', () => {
    expect(() =>
      policy({
        match: { kinds: ['Pod'] },
        validate: [
          {
            name: 'r',
            path: '$.spec.containers[?(@.name == "x" && @.n > 1)].image',
            required: true,
          },
        ],
      }),
    ).not.toThrow();
  });
});

describe('the time budget', () => {
  const two = (failurePolicy: string) =>
    policy({
      failurePolicy,
      validate: [
        { name: 'first', path: '$.data.v', schema: { type: 'string' } },
        { name: 'second', path: '$.data.v', schema: { type: 'string' } },
      ],
    });

  it('Fail: rules left without time deny, with one cause naming the budget', () => {
    const e = evaluate([two('Fail')], request('x'), { deadline: performance.now() - 1 });
    expect(e.allowed).toBe(false);
    expect(e.decisions.map((d) => d.rule)).toEqual(['first']);
    expect(e.status?.details?.causes?.map((c) => c.message)).toEqual([
      `Internal error: rule "first": ${OUT_OF_TIME}; nor was the rule after it`,
    ]);
  });

  it('a rule that would likely end past the deadline is not started', () => {
    // The slowest rule so far took 50 ms; 20 ms are left.
    const pace = { slowestRuleMs: 50 };
    const e = evaluate([two('Fail')], request('x'), { deadline: performance.now() + 20, pace });
    expect(e.decisions.map((d) => d.rule)).toEqual(['first']);
    const roomy = evaluate([two('Fail')], request('x'), {
      deadline: performance.now() + 10_000,
      pace,
    });
    expect(roomy).toMatchObject({ allowed: true, decisions: [] });
  });

  it('Ignore: rules left without time are skipped', () => {
    const e = evaluate([two('Ignore')], request('x'), { deadline: performance.now() - 1 });
    expect(e).toMatchObject({ allowed: true, decisions: [] });
  });

  it('within the budget, rules are evaluated as usual', () => {
    const e = evaluate([two('Fail')], request('x'), { deadline: performance.now() + 10_000 });
    expect(e).toMatchObject({ allowed: true, decisions: [] });
  });
});

describe('the cost budget of one rule', () => {
  // A chain 600 deep, 2,000 characters a level (1.2 MB): `$..*` matches every level and a
  // recursive schema reads each match to the bottom again, quadratic in the depth.
  let chain: Record<string, unknown> = { s: 'x'.repeat(2000) };
  for (let i = 0; i < 600; i++) chain = { s: 'x'.repeat(2000), n: chain };
  const everyLevel = (failurePolicy: string) =>
    policy({
      failurePolicy,
      validate: [
        {
          name: 'every',
          path: '$.data..*',
          schema: {
            type: ['object', 'string'],
            properties: { s: { type: 'string', pattern: '^x*$' } },
            additionalProperties: { $ref: '#' },
          },
        },
      ],
    });

  it('Fail: a rule that would run past its budget denies at once (it took 19 s)', () => {
    const [e, ms] = timed(() => evaluate([everyLevel('Fail')], configMapRequest({ chain })));
    expect(ms).toBeLessThan(1000);
    expect(e.allowed).toBe(false);
    expect(e.status?.details?.causes?.[0]?.message).toBe(
      `Internal error: rule "every": ${OUT_OF_COST}`,
    );
  });

  it('Ignore: the rule is skipped', () => {
    const e = evaluate([everyLevel('Ignore')], configMapRequest({ chain }));
    expect(e).toMatchObject({ allowed: true, decisions: [] });
  });

  it('bounds a mutate rule alike', () => {
    // Objects only, 900 deep: jsonpath-plus copies each node's path as it descends.
    let nested: Record<string, unknown> = {};
    for (let i = 0; i < 900; i++) nested = { n: nested };
    const p = policy({ mutate: [{ name: 'm', path: '$.data..*', setIfAbsent: { x: 1 } }] });
    const [e, ms] = timed(() => evaluate([p], configMapRequest({ nested })));
    expect(ms).toBeLessThan(1000);
    expect(e.status?.details?.causes?.[0]?.message).toContain(OUT_OF_COST);
  });

  it('still evaluates rules on large values and ordinary descents', () => {
    const big = evaluate([onValue('^x*$')], request('x'.repeat(3 << 20)));
    expect(big).toMatchObject({ allowed: true, decisions: [] });
    const shallow = policy({
      validate: [{ name: 'x', path: '$.data..s', schema: { type: 'string', pattern: '^x*$' } }],
    });
    let short: Record<string, unknown> = { s: 'x' };
    for (let i = 0; i < 50; i++) short = { s: 'x'.repeat(100), n: short };
    expect(evaluate([shallow], configMapRequest({ short }))).toMatchObject({ allowed: true });
    // A named descent through a wide object (75,000 values) visits it once, quickly.
    const env = Array.from({ length: 25000 }, (_, i) => ({ name: `E${i}`, value: 'v' }));
    const images = policy({
      validate: [{ name: 'i', path: '$.data..containers[*].image', schema: { pattern: ':' } }],
    });
    const wide = configMapRequest({ spec: { containers: [{ image: 'x', env }] } });
    const [e, ms] = timed(() => evaluate([images], wide));
    expect(e.status?.details?.causes?.[0]?.message).toContain('must match pattern');
    expect(ms).toBeLessThan(1000);
  });
});
