import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../admission/review.js';
import { compilePolicy, type CompiledPolicy } from '../compile.js';
import { decide } from '../engine.js';
import { evaluate } from '../evaluate.js';
import { scanObject } from '../scan.js';
import {
  compileException,
  ExceptionError,
  ExceptionSet,
  liveExceptions,
  parseKind,
  wildcard,
} from './match.js';

function policy(name: string, extra: Record<string, unknown> = {}): CompiledPolicy {
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: {
      match: { kinds: ['Pod', 'apps/Deployment'] },
      validate: [
        { name: 'team', path: '$.metadata.labels.team', required: true },
        { name: 'name', path: '$.metadata.name', nameRule: 'dns1035Label' },
      ],
      ...extra,
    },
  });
}

function exception(namespace: string, spec: object, name = 'ex') {
  return compileException({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'PolicyException',
    metadata: { name, namespace },
    spec: { reason: 'legacy', ...spec },
  });
}

function pod(
  namespace: string,
  name: string,
  labels: Record<string, string> = {},
): AdmissionRequest {
  const object = { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels } };
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    name,
    namespace,
    operation: 'CREATE',
    userInfo: { username: 'alice' },
    object,
    oldObject: null,
  };
}

const setOf = (...es: ReturnType<typeof exception>[]) => {
  const s = new ExceptionSet('annex-system');
  s.replace(es);
  return s;
};

describe('wildcard and parseKind', () => {
  it('reads * and ? as wildcards and everything else literally', () => {
    expect(wildcard('web-*').test('web-1')).toBe(true);
    expect(wildcard('web-*').test('api-1')).toBe(false);
    expect(wildcard('a?c').test('abc')).toBe(true);
    expect(wildcard('a.c').test('abc')).toBe(false);
    expect(wildcard('*').test('')).toBe(true);
    expect(wildcard('a*').test('')).toBe(false);
    expect(wildcard('*b*').test('abc')).toBe(true);
  });

  it('agrees with the anchored regular expression on generated patterns and names', () => {
    // A seeded generator: the same 20,000 pairs every run, over a small alphabet so that
    // matches are common.
    let seed = 7;
    const next = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const pick = (alphabet: string, max: number) =>
      Array.from({ length: next(max + 1) }, () => alphabet[next(alphabet.length)]).join('');
    let matched = 0;
    for (let n = 0; n < 20_000; n++) {
      const pattern = pick('ab*?', 6);
      const name = pick('ab', 8);
      const body = pattern.replace(/\*/g, '.*').replace(/\?/g, '.');
      const expected = new RegExp(`^${body}$`, 's').test(name);
      if (expected) matched++;
      expect(wildcard(pattern).test(name), `${pattern} ~ ${name}`).toBe(expected);
    }
    expect(matched).toBeGreaterThan(1000);
  });

  it("stays linear where a backtracking expression would not end (an author's pattern runs on every review)", () => {
    // As ^.*a.*a…b$, this pattern runs for minutes on 253 a's; the matcher answers at once.
    const pattern = '*a'.repeat(40) + 'b';
    const started = performance.now();
    expect(wildcard(pattern).test('a'.repeat(253))).toBe(false);
    // Generous for a loaded machine: the quadratic bound is ~20,000 steps.
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('reads kinds as Kind, group/Kind, version/Kind or group/version/Kind', () => {
    expect(parseKind('Pod')).toEqual({ kind: 'Pod' });
    expect(parseKind('apps/Deployment')).toEqual({ group: 'apps', kind: 'Deployment' });
    expect(parseKind('v1/Pod')).toEqual({ version: 'v1', kind: 'Pod' });
    expect(parseKind('apps/v1/Deployment')).toEqual({
      group: 'apps',
      version: 'v1',
      kind: 'Deployment',
    });
  });
});

describe('compileException', () => {
  it('refuses an exception without a reason, a policy or a filter', () => {
    expect(() =>
      exception('a', {
        reason: '',
        exceptions: [{ policyName: 'p' }],
        match: { any: [{ resources: { names: ['x'] } }] },
      }),
    ).toThrow(/spec.reason is required/);
    expect(() =>
      exception('a', { exceptions: [], match: { any: [{ resources: { names: ['x'] } }] } }),
    ).toThrow(ExceptionError);
    expect(() => exception('a', { exceptions: [{ policyName: 'p' }], match: {} })).toThrow(
      /set any or all/,
    );
    expect(() =>
      exception('a', { exceptions: [{ policyName: 'p' }], match: { any: [{ resources: {} }] } }),
    ).toThrow(/at least one of kinds/);
  });
});

describe('ExceptionSet.exemption', () => {
  const p = policy('require-team');
  const byName = exception('shop', {
    exceptions: [{ policyName: 'require-team', ruleNames: ['team'] }],
    match: { any: [{ resources: { kinds: ['Pod'], names: ['legacy-*'] } }] },
  });

  it('exempts the named rule of a matching object in its own namespace, and only that rule', () => {
    const s = setOf(byName);
    expect(s.exemption(p, 'team', pod('shop', 'legacy-1'))).toBe('shop/ex');
    expect(s.exemption(p, 'name', pod('shop', 'legacy-1'))).toBeUndefined();
    expect(s.exemption(p, 'team', pod('shop', 'web-1'))).toBeUndefined();
  });

  it("never exempts another namespace's objects, even when its namespaces filter names them", () => {
    const wide = exception('shop', {
      exceptions: [{ policyName: 'require-team' }],
      match: { any: [{ resources: { namespaces: ['*'] } }] },
    });
    const s = setOf(wide);
    expect(s.exemption(p, 'team', pod('shop', 'x'))).toBe('shop/ex');
    expect(s.exemption(p, 'team', pod('bank', 'x'))).toBeUndefined();
  });

  it("lets an exception in annex's namespace exempt any namespace and cluster-scoped objects", () => {
    const admin = exception('annex-system', {
      exceptions: [{ policyName: 'require-team' }],
      match: {
        any: [{ resources: { namespaces: ['bank'] } }, { resources: { kinds: ['Namespace'] } }],
      },
    });
    const s = setOf(admin);
    expect(s.exemption(p, 'team', pod('bank', 'x'))).toBe('annex-system/ex');
    expect(s.exemption(p, 'team', pod('shop', 'x'))).toBeUndefined();
    const ns: AdmissionRequest = {
      ...pod('', 'team-a'),
      namespace: '',
      kind: { group: '', version: 'v1', kind: 'Namespace' },
      resource: { group: '', version: 'v1', resource: 'namespaces' },
    };
    expect(s.exemption(p, 'team', ns)).toBe('annex-system/ex');
    // The same exception elsewhere cannot reach a cluster-scoped object, nor the Namespace
    // `shop` itself, whose review the API server sends with namespace: shop.
    const shopNs = setOf(exception('shop', admin.source.spec));
    expect(shopNs.exemption(p, 'team', ns)).toBeUndefined();
    expect(shopNs.exemption(p, 'team', { ...ns, name: 'shop', namespace: 'shop' })).toBeUndefined();
  });

  it('needs one filter of any and every filter of all; labels by selector', () => {
    const both = exception('shop', {
      exceptions: [{ policyName: 'require-team' }],
      match: {
        any: [{ resources: { kinds: ['apps/Deployment'] } }, { resources: { kinds: ['v1/Pod'] } }],
        all: [{ resources: { selector: { matchLabels: { legacy: 'true' } } } }],
      },
    });
    const s = setOf(both);
    expect(s.exemption(p, 'team', pod('shop', 'x', { legacy: 'true' }))).toBe('shop/ex');
    expect(s.exemption(p, 'team', pod('shop', 'x', { legacy: 'false' }))).toBeUndefined();
  });

  it('is refused by a policy with allowExceptions: false', () => {
    const strict = policy('require-team', { allowExceptions: false });
    const s = setOf(byName);
    expect(s.exemption(strict, 'team', pod('shop', 'legacy-1'))).toBeUndefined();
    expect(liveExceptions(s, strict)).toEqual([]);
    expect(liveExceptions(s, p).map((e) => e.key)).toEqual(['shop/ex']);
  });
});

describe('exceptions in evaluate, decide and scans', () => {
  const p = policy('require-team');
  const exceptions = setOf(
    exception('shop', {
      exceptions: [{ policyName: 'require-team', ruleNames: ['team'] }],
      match: { any: [{ resources: { names: ['legacy-*'] } }] },
    }),
  );

  it('allows what the exempted rule would deny, names the exception, still runs the other rules', () => {
    const req = pod('shop', 'legacy-1');
    expect(evaluate([p], req).allowed).toBe(false);
    const e = evaluate([p], req, { exceptions });
    expect(e.allowed).toBe(true);
    expect(e.exempted).toEqual([{ policy: 'require-team', rule: 'team', exception: 'shop/ex' }]);
    // The rule not named still applies: a dotted name is no DNS-1035 label.
    const bad = evaluate([p], pod('shop', 'legacy-1.x'), { exceptions });
    expect(bad.allowed).toBe(false);
    expect(bad.decisions.map((d) => d.rule)).toEqual(['name']);
  });

  it('makes every use an Exempt decision of its own (what the webhook records)', () => {
    const { verdict, decisions } = decide([p], pod('shop', 'legacy-1'), { exceptions });
    expect(verdict.allowed).toBe(true);
    expect(decisions).toEqual([
      { policy: 'require-team', rule: 'team', action: 'Exempt', causes: [], exception: 'shop/ex' },
    ]);
  });

  it('reports the exempted rule skip, with the exception named', () => {
    const req = pod('shop', 'legacy-1');
    const results = scanObject(
      [p],
      { group: '', version: 'v1', resource: 'pods', kind: 'Pod' },
      req.object!,
      { exceptions },
    );
    expect(results).toEqual([
      {
        policy: 'require-team',
        rule: 'team',
        result: 'skip',
        exception: 'shop/ex',
        message: 'exempted by PolicyException shop/ex',
      },
      { policy: 'require-team', rule: 'name', result: 'pass', message: '' },
    ]);
  });
});
