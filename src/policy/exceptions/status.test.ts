import { describe, expect, it } from 'vitest';
import type { AdmissionPolicy } from '../types.js';
import { exceptionStatus, policiesText } from './status.js';
import type { PolicyException } from './types.js';

const policy = (name: string, extra: Record<string, unknown> = {}): AdmissionPolicy => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name },
  spec: {
    match: { kinds: ['Pod'] },
    validate: [{ name: 'team', path: '$.metadata.labels.team', required: true }],
    ...extra,
  },
});

const ex = (exceptions: PolicyException['spec']['exceptions']): PolicyException => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'PolicyException',
  metadata: { name: 'ex', namespace: 'shop', generation: 2 },
  spec: { reason: 'legacy', exceptions, match: { any: [{ resources: { names: ['x'] } }] } },
});

const now = new Date('2026-01-01T00:00:00Z');
const known =
  (...ps: AdmissionPolicy[]) =>
  (n: string) =>
    ps.find((p) => p.metadata.name === n);

describe('exceptionStatus', () => {
  it('is Ready when every policy and rule exists and takes exceptions', () => {
    const s = exceptionStatus(
      ex([{ policyName: 'p', ruleNames: ['team'] }]),
      known(policy('p')),
      now,
    );
    expect(s.policies).toBe('p[team]');
    expect(s.observedGeneration).toBe(2);
    expect(s.conditions).toEqual([
      {
        type: 'Ready',
        status: 'True',
        reason: 'PoliciesFound',
        message: 'every policy and rule named exists and allows exceptions',
        observedGeneration: 2,
        lastTransitionTime: now.toISOString(),
      },
    ]);
  });

  it('says which policy or rule is missing or refuses exceptions, the first fault as reason', () => {
    const s = exceptionStatus(
      ex([
        { policyName: 'gone' },
        { policyName: 'p', ruleNames: ['nope'] },
        { policyName: 'strict' },
      ]),
      known(policy('p'), policy('strict', { allowExceptions: false })),
      now,
    );
    expect(s.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'PolicyNotFound',
      message:
        'AdmissionPolicy "gone" not found; AdmissionPolicy "p" has no validate rule "nope"; AdmissionPolicy "strict" does not allow exceptions (spec.allowExceptions: false)',
    });
    const rule = exceptionStatus(
      ex([{ policyName: 'p', ruleNames: ['nope'] }]),
      known(policy('p')),
      now,
    );
    expect(rule.conditions?.[0]?.reason).toBe('RuleNotFound');
  });

  it('keeps lastTransitionTime while the status holds', () => {
    const first = exceptionStatus(ex([{ policyName: 'p' }]), known(policy('p')), now);
    const later = exceptionStatus(
      { ...ex([{ policyName: 'p' }]), status: first },
      known(policy('p')),
      new Date('2026-02-01T00:00:00Z'),
    );
    expect(later.conditions?.[0]?.lastTransitionTime).toBe(now.toISOString());
  });

  it('prints whole policies bare and rules in brackets', () => {
    expect(
      policiesText(ex([{ policyName: 'a' }, { policyName: 'b', ruleNames: ['x', 'y'] }])),
    ).toBe('a,b[x,y]');
  });
});
