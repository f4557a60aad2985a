import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from './review.js';
import { allow } from './verdict.js';
import {
  matchingRegistration,
  mutatingWebhook,
  ruleMatches,
  selectorMatches,
  validatingWebhook,
  webhookPath,
} from './webhook.js';

const req = (over: Partial<AdmissionRequest> = {}): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace: 'shop',
  operation: 'CREATE',
  object: { metadata: { name: 'web', labels: { tier: 'front' } } },
  ...over,
});

describe('ruleMatches (admissionregistration semantics)', () => {
  const rule = {
    operations: ['CREATE' as const],
    apiGroups: ['apps'],
    apiVersions: ['v1'],
    resources: ['deployments'],
  };
  it('matches group, version, resource and operation', () => {
    expect(ruleMatches(rule, req())).toBe(true);
    expect(ruleMatches(rule, req({ operation: 'UPDATE' }))).toBe(false);
    expect(ruleMatches({ ...rule, apiGroups: ['batch'] }, req())).toBe(false);
    expect(ruleMatches({ ...rule, apiVersions: ['v2'] }, req())).toBe(false);
  });
  it('keeps subresources apart: "*" is every resource, "*/*" every subresource too', () => {
    const scale = req({ subResource: 'scale' });
    expect(ruleMatches(rule, scale)).toBe(false);
    expect(ruleMatches({ ...rule, resources: ['*'] }, scale)).toBe(false);
    expect(ruleMatches({ ...rule, resources: ['*/*'] }, scale)).toBe(true);
    expect(ruleMatches({ ...rule, resources: ['deployments/scale'] }, scale)).toBe(true);
    expect(ruleMatches({ ...rule, resources: ['*/scale'] }, scale)).toBe(true);
    expect(ruleMatches({ ...rule, resources: ['deployments/status'] }, scale)).toBe(false);
  });
  it('honours scope', () => {
    expect(ruleMatches({ ...rule, scope: 'Namespaced' }, req())).toBe(true);
    expect(ruleMatches({ ...rule, scope: 'Cluster' }, req())).toBe(false);
    expect(ruleMatches({ ...rule, scope: 'Cluster' }, req({ namespace: '' }))).toBe(true);
  });
  it('takes a Namespace as cluster-scoped, though its request carries its own name as namespace', () => {
    const all = { operations: ['*' as const], apiGroups: [''], apiVersions: ['v1'] };
    for (const [operation, subResource] of [
      ['CREATE', undefined],
      ['UPDATE', undefined],
      ['DELETE', undefined],
      ['UPDATE', 'status'],
      ['UPDATE', 'finalize'],
    ] as const) {
      const ns = req({
        kind: { group: '', version: 'v1', kind: 'Namespace' },
        resource: { group: '', version: 'v1', resource: 'namespaces' },
        namespace: 'vault',
        name: 'vault',
        operation,
        ...(subResource ? { subResource } : {}),
      });
      const resources = [subResource ? 'namespaces/*' : 'namespaces'];
      expect(ruleMatches({ ...all, resources, scope: 'Cluster' }, ns)).toBe(true);
      expect(ruleMatches({ ...all, resources, scope: 'Namespaced' }, ns)).toBe(false);
      expect(ruleMatches({ ...all, resources, scope: '*' }, ns)).toBe(true);
    }
  });
  it('never matches the kinds the API server never sends to webhooks', () => {
    const everything = {
      operations: ['*' as const],
      apiGroups: ['*'],
      apiVersions: ['*'],
      resources: ['*/*'],
    };
    for (const [resource, kind] of [
      ['validatingwebhookconfigurations', 'ValidatingWebhookConfiguration'],
      ['mutatingwebhookconfigurations', 'MutatingWebhookConfiguration'],
      ['validatingadmissionpolicies', 'ValidatingAdmissionPolicy'],
      ['validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding'],
      ['mutatingadmissionpolicies', 'MutatingAdmissionPolicy'],
      ['mutatingadmissionpolicybindings', 'MutatingAdmissionPolicyBinding'],
    ]) {
      const group = 'admissionregistration.k8s.io';
      const r = req({
        kind: { group, version: 'v1', kind: kind! },
        resource: { group, version: 'v1', resource: resource! },
        namespace: '',
      });
      expect(ruleMatches(everything, r)).toBe(false);
      expect(ruleMatches(everything, { ...r, kind: { ...r.kind, group: 'example.com' } })).toBe(
        true,
      );
    }
  });
  it('splits a resource pattern at its first slash: "pods/exec/x" is no subresource', () => {
    const exec = req({
      kind: { group: '', version: 'v1', kind: 'PodExecOptions' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      subResource: 'exec',
      operation: 'CONNECT',
    });
    const connect = { operations: ['CONNECT' as const], apiGroups: [''], apiVersions: ['v1'] };
    expect(ruleMatches({ ...connect, resources: ['pods/exec'] }, exec)).toBe(true);
    expect(ruleMatches({ ...connect, resources: ['pods/exec/x'] }, exec)).toBe(false);
  });
});

describe('selectorMatches (metav1.LabelSelector)', () => {
  it('ANDs matchLabels and every expression operator', () => {
    const labels = { tier: 'front', env: 'prod' };
    expect(selectorMatches({ matchLabels: { tier: 'front' } }, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { tier: 'back' } }, labels)).toBe(false);
    const ex = (operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist', values?: string[]) =>
      selectorMatches(
        { matchExpressions: [{ key: 'env', operator, ...(values ? { values } : {}) }] },
        labels,
      );
    expect([
      ex('In', ['prod']),
      ex('In', ['dev']),
      ex('NotIn', ['dev']),
      ex('NotIn', ['prod']),
    ]).toEqual([true, false, true, false]);
    expect([ex('Exists'), ex('DoesNotExist')]).toEqual([true, false]);
    expect(
      selectorMatches({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['a'] }] }, {}),
    ).toBe(true);
  });
});

describe('declaring webhooks', () => {
  it('derives the path and configuration from the qualified name', () => {
    const w = validatingWebhook({
      name: 'pinned.example.com',
      match: { kinds: ['Pod'] },
      admit: () => allow(),
    });
    expect([w.name, w.configuration, webhookPath(w)]).toEqual([
      'pinned',
      'annex-pinned',
      '/validate/pinned.example.com',
    ]);
    const m = mutatingWebhook({
      name: 'x.example.com',
      match: { kinds: ['Pod'] },
      admit: () => allow(),
    });
    expect(webhookPath(m)).toBe('/mutate/x.example.com');
  });
  it('serves distinct names at distinct paths, however alike (x.a.com, x.b.com, x-a.com, …)', () => {
    // Labels from a small alphabet, so that generated names often share first labels.
    const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,3}[a-z0-9])?$/);
    const name = fc.array(label, { minLength: 2, maxLength: 4 }).map((ls) => ls.join('.'));
    const pathOf = (n: string) =>
      webhookPath(validatingWebhook({ name: n, match: { kinds: ['Pod'] }, admit: () => allow() }));
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(pathOf(a) === pathOf(b)).toBe(a === b);
        // The path is the name, readable and unescaped: it ends the URL.
        expect(pathOf(a)).toBe(`/validate/${a}`);
      }),
      { numRuns: 2000 },
    );
    expect(pathOf('x.a.com')).not.toBe(pathOf('x.b.com'));
  });
  it('refuses names that are not qualified, webhooks that match nothing, and unknown kinds', () => {
    const admit = () => allow();
    expect(() => validatingWebhook({ name: 'pinned', match: { kinds: ['Pod'] }, admit })).toThrow(
      /fully qualified/,
    );
    // The whole name becomes the URL path, so every label must be a DNS label.
    for (const name of ['x.A.com', 'x.a_b.com', 'x..com', 'x.a.com/', 'x.a.com?y', 'x.a.com.']) {
      expect(() => validatingWebhook({ name, match: { kinds: ['Pod'] }, admit }), name).toThrow(
        /fully qualified/,
      );
    }
    expect(() => validatingWebhook({ name: 'a.example.com', admit })).toThrow(
      /declare what it matches/,
    );
    expect(() =>
      validatingWebhook({ name: 'a.example.com', match: { kinds: ['Widget'] }, admit }),
    ).toThrow(/"Widget" is not a built-in kind/);
    expect(() =>
      validatingWebhook({ name: 'a.example.com', match: { kinds: ['batch/Deployment'] }, admit }),
    ).toThrow(/not a built-in kind/);
  });
  it('picks the first registration whose rules and object selector match', () => {
    const w = mutatingWebhook({
      name: 'd.example.com',
      match: { kinds: ['Deployment'], operations: ['CREATE'] },
      failurePolicy: 'Fail',
      also: [
        {
          name: 'cr.example.com',
          rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
          objectSelector: { matchLabels: { opt: 'in' } },
          failurePolicy: 'Ignore',
        },
      ],
      admit: () => allow(),
    });
    expect(matchingRegistration(w, req())?.name).toBe('d.example.com');
    const widget = req({ resource: { group: 'x.io', version: 'v1', resource: 'widgets' } });
    expect(matchingRegistration(w, widget)).toBeUndefined();
    const optedIn = { ...widget, object: { metadata: { name: 'w', labels: { opt: 'in' } } } };
    expect(matchingRegistration(w, optedIn)?.name).toBe('cr.example.com');
    // On DELETE the labels are the old object's.
    const deleted = {
      ...widget,
      operation: 'DELETE' as const,
      object: null,
      oldObject: optedIn.object,
    };
    expect(matchingRegistration(w, deleted)?.name).toBe('cr.example.com');
  });
});
