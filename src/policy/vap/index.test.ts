import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../admission/review.js';
import { compileVaps, evaluateVaps, loadVaps, vapMatches, type VapMatch } from './index.js';

const AR = 'admissionregistration.k8s.io/v1';
type Obj = Record<string, unknown>;

const vap = (name: string, spec: Obj): Obj => ({
  apiVersion: AR,
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name },
  spec: {
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: ['apps'],
          apiVersions: ['v1'],
          operations: ['CREATE', 'UPDATE'],
          resources: ['deployments'],
        },
      ],
    },
    ...spec,
  },
});
const binding = (name: string, policyName: string, spec: Obj = {}): Obj => ({
  apiVersion: AR,
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name },
  spec: { policyName, validationActions: ['Deny'], ...spec },
});
const set = (...objs: Obj[]) => compileVaps(objs.map((obj) => ({ obj, source: 'f.yaml' })));

const deployment = (replicas: number, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'web', namespace: 'prod', labels },
  spec: { replicas },
});
const request = (object: Obj, over: Partial<AdmissionRequest> = {}): AdmissionRequest =>
  ({
    uid: 'u',
    kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps', version: 'v1', resource: 'deployments' },
    name: 'web',
    namespace: 'prod',
    operation: 'CREATE',
    userInfo: {},
    object,
    oldObject: null,
    ...over,
  }) as unknown as AdmissionRequest;

const replicas = vap('replicas', {
  validations: [{ expression: 'object.spec.replicas <= 3', message: 'at most 3 replicas' }],
});

describe('evaluateVaps: as the ValidatingAdmissionPolicy plugin answers', () => {
  it('Deny: the API server refusal, its whole message', () => {
    const e = evaluateVaps(set(replicas, binding('b', 'replicas')), request(deployment(5)));
    expect(e.status?.message).toBe(
      `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'replicas' with binding 'b' denied request: at most 3 replicas`,
    );
    expect(e.status?.code).toBe(422);
    expect(e.status?.details?.causes).toEqual([
      {
        message: `ValidatingAdmissionPolicy 'replicas' with binding 'b' denied request: at most 3 replicas`,
      },
    ]);
    expect(evaluateVaps(set(replicas, binding('b', 'replicas')), request(deployment(2)))).toEqual({
      otherDenials: [],
      warnings: [],
      audits: [],
    });
  });

  it('Warn and Audit: a warning line, an audit record, no refusal', () => {
    const e = evaluateVaps(
      set(replicas, binding('b', 'replicas', { validationActions: ['Warn', 'Audit'] })),
      request(deployment(5)),
    );
    expect(e.status).toBeUndefined();
    expect(e.warnings).toEqual([
      `Validation failed for ValidatingAdmissionPolicy 'replicas' with binding 'b': at most 3 replicas`,
    ]);
    expect(e.audits).toEqual([
      `ValidatingAdmissionPolicy 'replicas' with binding 'b': at most 3 replicas`,
    ]);
  });

  it('reason, messageExpression with variables, and the failed-expression fallback', () => {
    const p = vap('p', {
      variables: [{ name: 'n', expression: 'object.spec.replicas' }],
      validations: [
        {
          expression: 'variables.n < 4',
          messageExpression: "'too many: ' + string(variables.n)",
          reason: 'Forbidden',
        },
        { expression: 'variables.n < 2' },
      ],
    });
    const e = evaluateVaps(set(p, binding('b', 'p')), request(deployment(5)));
    expect(e.status?.code).toBe(403);
    expect(e.status?.reason).toBe('Forbidden');
    expect(e.status?.message).toMatch(/denied request: too many: 5$/);
    // The second failure is another denial of the same policy and binding: one is named.
    expect(e.otherDenials).toEqual([]);
    const second = evaluateVaps(set(p, binding('b', 'p')), request(deployment(3)));
    expect(second.status?.message).toMatch(/denied request: failed expression: variables.n < 2$/);
  });

  it('messages as validator.go takes them: trimmed; a multi-line one falls back; a blank message to the expression', () => {
    const msg = (v: Obj) =>
      evaluateVaps(
        set(vap('m', { validations: [v] }), binding('b', 'm')),
        request(deployment(1)),
      ).status?.message.replace(/^.*denied request: /, '');
    expect(msg({ expression: 'false', messageExpression: "'  padded  '" })).toBe('padded');
    expect(msg({ expression: 'false', messageExpression: "'a\\nb'", message: ' static ' })).toBe(
      'static',
    );
    expect(msg({ expression: ' false ', message: '   ' })).toBe('failed expression: false');
  });

  it('a warning text is sent once', () => {
    const e = evaluateVaps(
      set(
        vap('w', {
          validations: [
            { expression: 'false', message: 'same' },
            { expression: 'false', message: 'same' },
          ],
        }),
        binding('b', 'w', { validationActions: ['Warn'] }),
      ),
      request(deployment(1)),
    );
    expect(e.warnings).toEqual([
      "Validation failed for ValidatingAdmissionPolicy 'w' with binding 'b': same",
    ]);
  });

  it('matchConditions: a false one skips the policy; an error fails it unless failurePolicy is Ignore', () => {
    const gated = (cond: string, failurePolicy?: string) =>
      vap('g', {
        ...(failurePolicy ? { failurePolicy } : {}),
        matchConditions: [{ name: 'c', expression: cond }],
        validations: [{ expression: 'false', message: 'no' }],
      });
    const run = (p: Obj) =>
      evaluateVaps(set(p, binding('b', 'g')), request(deployment(1))).status?.message;
    expect(run(gated('false'))).toBeUndefined();
    expect(run(gated('true'))).toMatch(/denied request: no$/);
    expect(run(gated("object.metadata.labels['x'] == 'y'"))).toMatch(
      /denied request: expression 'object.metadata.labels\['x'\] == 'y'' resulted in error: no such key: x$/,
    );
    expect(run(gated("object.metadata.labels['x'] == 'y'", 'Ignore'))).toBeUndefined();
  });

  it('an evaluation error in a validation: denied with Fail, admitted with Ignore', () => {
    const p = (failurePolicy: string) =>
      vap('e', { failurePolicy, validations: [{ expression: "object.spec.missing == 'x'" }] });
    expect(
      evaluateVaps(set(p('Fail'), binding('b', 'e')), request(deployment(1))).status?.message,
    ).toMatch(/denied request: expression '.*' resulted in error: no such key: missing$/);
    expect(
      evaluateVaps(set(p('Ignore'), binding('b', 'e')), request(deployment(1))).status,
    ).toBeUndefined();
  });

  it('a binding narrows with matchResources; several denials: the first named, the others listed', () => {
    const s = set(
      replicas,
      binding('only-team-a', 'replicas', {
        matchResources: { objectSelector: { matchLabels: { team: 'a' } } },
      }),
      binding('all', 'replicas'),
    );
    expect(evaluateVaps(s, request(deployment(5))).status?.message).toMatch(/binding 'all'/);
    const both = evaluateVaps(s, request(deployment(5, { team: 'a' })));
    expect(both.status?.message).toMatch(/binding 'only-team-a'/);
    expect(both.otherDenials).toEqual(["ValidatingAdmissionPolicy 'replicas' with binding 'all'"]);
  });

  it('a policy without binding does nothing, and says so', () => {
    const s = set(replicas);
    expect(s.notes).toEqual([
      "f.yaml: ValidatingAdmissionPolicy 'replicas' has no binding: it does nothing",
    ]);
    expect(evaluateVaps(s, request(deployment(9))).status).toBeUndefined();
  });
});

describe('vapMatches: matchConstraints and matchResources', () => {
  const rule = {
    apiGroups: ['apps'],
    apiVersions: ['v1beta1'],
    operations: ['CREATE'],
    resources: ['deployments'],
  };
  const m = (over: Obj): VapMatch =>
    set(vap('m', { matchConstraints: over, validations: [{ expression: 'true' }] })).policies[0]!
      .match;
  it('Equivalent (the default) takes another version of the resource; Exact does not', () => {
    expect(vapMatches(m({ resourceRules: [rule] }), request(deployment(1)))).toBe(true);
    expect(
      vapMatches(m({ resourceRules: [rule], matchPolicy: 'Exact' }), request(deployment(1))),
    ).toBe(false);
  });
  it('operations, scope, resourceNames, excludeResourceRules', () => {
    const any = { ...rule, apiVersions: ['*'] };
    const req = request(deployment(1));
    expect(vapMatches(m({ resourceRules: [{ ...any, operations: ['UPDATE'] }] }), req)).toBe(false);
    expect(vapMatches(m({ resourceRules: [{ ...any, scope: 'Cluster' }] }), req)).toBe(false);
    expect(vapMatches(m({ resourceRules: [{ ...any, resourceNames: ['api'] }] }), req)).toBe(false);
    expect(vapMatches(m({ resourceRules: [any], excludeResourceRules: [{ ...any }] }), req)).toBe(
      false,
    );
    expect(vapMatches(m({ resourceRules: [any] }), req)).toBe(true);
  });
  it("namespaceSelector: the namespace's labels are only its name's, unless given", () => {
    const sel = m({
      resourceRules: [rule],
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'prod' } },
    });
    expect(vapMatches(sel, request(deployment(1)))).toBe(true);
    expect(vapMatches(sel, request(deployment(1), { namespace: 'dev' }))).toBe(false);
    const tier = m({ resourceRules: [rule], namespaceSelector: { matchLabels: { tier: 'x' } } });
    expect(vapMatches(tier, request(deployment(1)))).toBe(false);
    expect(
      vapMatches(tier, request(deployment(1)), {
        namespaceLabels: { 'kubernetes.io/metadata.name': 'prod', tier: 'x' },
      }),
    ).toBe(true);
  });
});

describe('loadVaps: the files kubectl get -o yaml writes; bad input is one line', () => {
  const dir = mkdtempSync(join(tmpdir(), 'annex-vap-'));
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };
  it('reads a List with items', () => {
    const f = file(
      'list.json',
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [replicas, binding('b', 'replicas')],
      }),
    );
    const s = loadVaps([f]);
    expect(s.policies.map((p) => [p.name, p.bindings.map((b) => b.name)])).toEqual([
      ['replicas', ['b']],
    ]);
    expect(s.notes).toEqual([]);
  });
  const refuses = (objs: Obj[], message: string) => expect(() => set(...objs)).toThrow(message);
  it('refuses params, unknown functions, missing validations, other kinds, a dangling binding', () => {
    refuses(
      [vap('p', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [] })],
      "f.yaml: ValidatingAdmissionPolicy 'p': paramKind (policy parameters) is not supported offline yet",
    );
    refuses(
      [vap('p', { validations: [{ expression: 'object.spec.replicas.frobnicate()' }] })],
      "f.yaml: ValidatingAdmissionPolicy 'p': validations[0].expression: function frobnicate() is not implemented by annex's in-process CEL",
    );
    refuses([vap('p', {})], "f.yaml: ValidatingAdmissionPolicy 'p': has no spec.validations");
    refuses(
      [deployment(1)],
      "f.yaml: apps/v1 Deployment 'web' is not a ValidatingAdmissionPolicy or ValidatingAdmissionPolicyBinding of admissionregistration.k8s.io/v1",
    );
    refuses(
      [binding('b', 'nope')],
      "f.yaml: ValidatingAdmissionPolicyBinding 'b' names ValidatingAdmissionPolicy 'nope', which no --vap file has",
    );
    refuses(
      [replicas, binding('b', 'replicas', { paramRef: { name: 'x' } })],
      "f.yaml: ValidatingAdmissionPolicyBinding 'b' (of ValidatingAdmissionPolicy 'replicas'): paramRef (policy parameters) is not supported offline yet",
    );
  });
  it('notes auditAnnotations, which it ignores', () => {
    const s = set(
      vap('a', {
        validations: [{ expression: 'true' }],
        auditAnnotations: [{ key: 'k', valueExpression: "'v'" }],
      }),
      binding('b', 'a'),
    );
    expect(s.notes).toEqual([
      "f.yaml: ValidatingAdmissionPolicy 'a': auditAnnotations are not evaluated offline (ignored)",
    ]);
  });
});
