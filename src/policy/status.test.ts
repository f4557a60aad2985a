import { describe, expect, it } from 'vitest';
import { createCa, issue } from '../certs/issue.js';
import { compilePolicy } from './compile.js';
import { caBundleVerifies, rulesCover, summary, webhookEnforcement } from './status.js';
import type { AdmissionPolicy } from './types.js';

const pods = {
  operations: ['CREATE' as const, 'UPDATE' as const],
  apiGroups: [''],
  apiVersions: ['v1'],
  resources: ['pods'],
  scope: '*' as const,
};

describe('rulesCover', () => {
  it('holds when one observed rule matches every operation, group, version and resource', () => {
    expect(rulesCover([{ ...pods, resources: ['deployments', 'pods'] }], [pods])).toBe(true);
    expect(rulesCover([{ ...pods, operations: ['*'], apiVersions: ['*'] }], [pods])).toBe(true);
  });
  it('fails on a missing operation, resource, or a narrower scope', () => {
    expect(rulesCover([], [pods])).toBe(false);
    expect(rulesCover(undefined, [pods])).toBe(false);
    expect(rulesCover([{ ...pods, operations: ['CREATE'] }], [pods])).toBe(false);
    expect(rulesCover([{ ...pods, resources: ['pods/status'] }], [pods])).toBe(false);
    expect(rulesCover([{ ...pods, scope: 'Namespaced' }], [pods])).toBe(false);
    expect(rulesCover([{ ...pods, scope: 'Namespaced' }], [{ ...pods, scope: 'Namespaced' }])).toBe(
      true,
    );
  });
});

describe('caBundleVerifies', async () => {
  const ca = await createCa();
  const other = await createCa();
  const serving = await issue({ ca, commonName: 'annex', usages: ['serverAuth'] });
  const b64 = (pem: string) => Buffer.from(pem).toString('base64');
  it('holds for a bundle holding the issuing CA (among others)', () => {
    expect(caBundleVerifies(b64(ca.certPem), serving.certPem)).toBe(true);
    expect(caBundleVerifies(b64(other.certPem + ca.certPem), serving.certPem)).toBe(true);
  });
  it('fails for another CA, an empty or garbled bundle', () => {
    expect(caBundleVerifies(b64(other.certPem), serving.certPem)).toBe(false);
    expect(caBundleVerifies('', serving.certPem)).toBe(false);
    expect(caBundleVerifies(undefined, serving.certPem)).toBe(false);
    expect(caBundleVerifies(b64('not a pem'), serving.certPem)).toBe(false);
  });

  it('webhookEnforcement: True only with covering rules and a verifying caBundle', () => {
    const policy = compilePolicy({
      apiVersion: 'policy.annex.dev/v1alpha1',
      kind: 'AdmissionPolicy',
      metadata: { name: 'p' },
      spec: {
        match: { kinds: ['Pod'] },
        validate: [{ name: 'r', path: '$.spec.hostNetwork', forbidden: true }],
      },
    });
    const good = { rules: policy.rules, clientConfig: { caBundle: b64(ca.certPem) } };
    const at = (o: object) => webhookEnforcement(policy, o, serving.certPem, 'annex-policies');
    expect(at({ validating: good })).toMatchObject({ status: 'True', reason: 'WebhookRegistered' });
    expect(at({})).toMatchObject({ status: 'False', reason: 'WebhookNotRegistered' });
    expect(at({ validating: { ...good, rules: [] } })).toMatchObject({
      status: 'False',
      reason: 'RulesPending',
    });
    expect(
      at({ validating: { ...good, clientConfig: { caBundle: b64(other.certPem) } } }),
    ).toMatchObject({ status: 'False', reason: 'CABundleMismatch' });
    // A validate-only policy needs nothing of the mutating configuration.
    expect(at({ validating: good, mutating: { rules: [] } }).status).toBe('True');
  });
});

describe('summary', () => {
  const base = {
    apiVersion: 'policy.annex.dev/v1alpha1' as const,
    kind: 'AdmissionPolicy' as const,
    metadata: { name: 'p' },
  };
  it('says the actions and kinds as text; Mutate for mutate rules', () => {
    const validate = [{ name: 'r', path: '$.a', required: true }];
    const mutate = [{ name: 'm', path: '$.spec', setIfAbsent: { a: 1 } }];
    const of = (spec: AdmissionPolicy['spec']) => summary({ ...base, spec });
    expect(of({ match: { kinds: ['Pod', 'apps/Deployment'] }, validate })).toEqual({
      actions: 'Deny',
      kinds: 'Pod,apps/Deployment',
    });
    expect(of({ match: { kinds: ['Pod'] }, actions: ['Warn', 'Audit'], validate }).actions).toBe(
      'Warn,Audit',
    );
    expect(of({ match: { kinds: ['Pod'] }, mutate }).actions).toBe('Mutate');
    expect(
      of({
        match: {
          resources: [{ apiGroups: ['x.dev'], apiVersions: ['v1'], resources: ['widgets'] }],
        },
        validate,
      }).kinds,
    ).toBe('widgets');
  });
});
