import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../admission/review.js';
import type { KubeObject } from '../core/types.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { evaluate } from './evaluate.js';

function policy(name: string, spec: Record<string, unknown>): CompiledPolicy {
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec,
  });
}

function deployment(name: string, images: string[], labels: Record<string, string> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', labels },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: images.map((image, i) => ({ name: `c${i}`, image })) },
      },
    },
  } as KubeObject;
}

function request(object: KubeObject, over: Partial<AdmissionRequest> = {}): AdmissionRequest {
  const [group, version] = String(object.apiVersion).includes('/')
    ? String(object.apiVersion).split('/')
    : ['', String(object.apiVersion)];
  const kind = String(object.kind);
  return {
    uid: 'u',
    kind: { group: group ?? '', version: version ?? 'v1', kind },
    resource: { group: group ?? '', version: version ?? 'v1', resource: `${kind.toLowerCase()}s` },
    name: object.metadata?.name ?? '',
    namespace: object.metadata?.namespace ?? 'shop',
    operation: 'CREATE',
    userInfo: {},
    object,
    ...over,
  };
}

const names = policy('names', {
  match: { kinds: ['apps/Deployment'] },
  validate: [{ name: 'label', path: '$.metadata.name', nameRule: 'dns1123Label' }],
});
const tags = policy('tags', {
  match: { kinds: ['apps/Deployment'] },
  validate: [
    {
      name: 'pinned',
      path: '$.spec.template.spec.containers[*].image',
      schema: { type: 'string', pattern: ':(?!latest$)[^:/]+$' },
      message: 'must be pinned to a tag other than latest',
    },
  ],
});

describe('evaluate: validation', () => {
  it("denies with Kubernetes' own name message, as one 422 Invalid Status", () => {
    const e = evaluate([names], request(deployment('web.front', ['nginx:1.27'])));
    expect(e.allowed).toBe(false);
    expect(e.status).toMatchObject({
      code: 422,
      reason: 'Invalid',
      message:
        'Deployment.apps "web.front" is invalid: metadata.name: Invalid value: "web.front": must not contain dots',
      details: {
        name: 'web.front',
        group: 'apps',
        kind: 'Deployment',
        causes: [
          {
            reason: 'FieldValueInvalid',
            field: 'metadata.name',
            message: 'Invalid value: "web.front": must not contain dots',
          },
        ],
      },
    });
    expect(e.decisions).toEqual([
      { policy: 'names', rule: 'label', action: 'Deny', causes: [expect.any(Object)] },
    ]);
    expect(e.warnings).toEqual([]);
    expect(e.mutated).toBeUndefined();
  });

  it('allows what every policy accepts', () => {
    const e = evaluate([names, tags], request(deployment('web', ['nginx:1.27'])));
    expect(e).toEqual({
      allowed: true,
      warnings: [],
      decisions: [],
      matched: [names.name, tags.name],
    });
  });

  it('checks every match, each reported with its own field path, all folded into one Status', () => {
    const e = evaluate(
      [names, tags],
      request(deployment('Web', ['nginx:1.27', 'redis', 'busybox:latest'])),
    );
    expect(e.status?.details?.causes?.map((c) => `${c.field}: ${c.message}`)).toEqual([
      `metadata.name: Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
      'spec.template.spec.containers[1].image: Invalid value: "redis": must be pinned to a tag other than latest',
      'spec.template.spec.containers[2].image: Invalid value: "busybox:latest": must be pinned to a tag other than latest',
    ]);
    expect(e.status?.message).toMatch(/^Deployment\.apps "Web" is invalid: \[metadata\.name: /);
    expect(e.decisions.map((d) => [d.policy, d.causes.length])).toEqual([
      ['names', 1],
      ['tags', 2],
    ]);
  });

  it('required, forbidden and schema causes read like built-in validation', () => {
    const p = policy('shape', {
      match: { kinds: ['apps/Deployment'] },
      validate: [
        { name: 'app', path: "$.metadata.labels['app.kubernetes.io/name']", required: true },
        { name: 'host', path: '$.spec.template.spec.hostNetwork', forbidden: true },
        {
          name: 'res',
          path: '$.spec.template.spec.containers[*]',
          schema: {
            type: 'object',
            required: ['resources'],
            properties: { name: { type: 'string', maxLength: 2 } },
          },
        },
        {
          name: 'replicas',
          path: '$.spec.replicas',
          schema: { type: 'integer', maximum: 3 },
        },
      ],
    });
    const d = deployment('web', ['nginx:1.27']);
    const spec = d.spec as { replicas?: number; template: { spec: Record<string, unknown> } };
    spec.template.spec.hostNetwork = true;
    spec.replicas = 5;
    const e = evaluate([p], request(d));
    expect(e.status?.details?.causes?.map((c) => `${c.field}: ${c.message}`)).toEqual([
      'metadata.labels[app.kubernetes.io/name]: Required value',
      'spec.template.spec.hostNetwork: Forbidden',
      'spec.template.spec.containers[0].resources: Required value',
      'spec.replicas: Invalid value: 5: must be <= 3',
    ]);
    // With the label and without the rest, it passes; an empty label value is still missing.
    const ok = deployment('web', ['nginx:1.27'], { 'app.kubernetes.io/name': 'web' });
    (ok.spec as { template: { spec: { containers: object[] } } }).template.spec.containers = [
      { name: 'c', image: 'x:1', resources: {} },
    ];
    expect(evaluate([p], request(ok)).allowed).toBe(true);
    const empty = deployment('web', ['nginx:1.27'], { 'app.kubernetes.io/name': '' });
    expect(evaluate([p], request(empty)).decisions[0]?.rule).toBe('app');
  });

  it("a rule's message replaces the detail; a non-string is refused by a name rule", () => {
    const p = policy('n', {
      match: { kinds: ['apps/Deployment'] },
      validate: [
        { name: 'n', path: '$.metadata.name', nameRule: 'dns1123Label', message: 'no dots please' },
        { name: 'c', path: '$.spec.template.spec.containers[*].name', nameRule: 'dns1035Label' },
      ],
    });
    const d = deployment('a.b', ['x:1']);
    (
      d.spec as { template: { spec: { containers: { name: unknown }[] } } }
    ).template.spec.containers[0]!.name = 7;
    expect(evaluate([p], request(d)).status?.details?.causes?.map((c) => c.message)).toEqual([
      'Invalid value: "a.b": no dots please',
      'Invalid value: 7: must be a string',
    ]);
  });

  it('Warn gives warnings and allows; Audit only records; Deny+Warn does both', () => {
    const warn = policy('tags-warn', { ...tags.source.spec, actions: ['Warn'] });
    const audit = policy('tags-audit', { ...tags.source.spec, actions: ['Audit'] });
    const both = policy('names-both', { ...names.source.spec, actions: ['Deny', 'Warn'] });
    const e = evaluate([warn, audit], request(deployment('web', ['redis'])));
    expect(e.allowed).toBe(true);
    expect(e.status).toBeUndefined();
    expect(e.warnings).toEqual([
      'tags-warn: spec.template.spec.containers[0].image: Invalid value: "redis": must be pinned to a tag other than latest',
    ]);
    expect(e.decisions.map((d) => [d.policy, d.action])).toEqual([
      ['tags-warn', 'Warn'],
      ['tags-audit', 'Audit'],
    ]);
    const b = evaluate([both], request(deployment('a.b', ['x:1'])));
    expect(b.allowed).toBe(false);
    expect(b.warnings).toEqual([
      'names-both: metadata.name: Invalid value: "a.b": must not contain dots',
    ]);
    expect(b.decisions.map((d) => d.action)).toEqual(['Deny']);
  });
});

describe('evaluate: matching', () => {
  const bad = deployment('a.b', ['x:1']);
  const denied = (p: CompiledPolicy, over: Partial<AdmissionRequest> = {}, ctx = {}) =>
    !evaluate([p], request(bad, over), ctx).allowed;
  const withSpec = (spec: Record<string, unknown>) =>
    policy('p', { ...names.source.spec, ...spec });

  it('by kind and operation (default CREATE and UPDATE)', () => {
    expect(denied(names)).toBe(true);
    expect(denied(names, { operation: 'UPDATE' })).toBe(true);
    expect(denied(names, { operation: 'DELETE', object: null, oldObject: bad })).toBe(false);
    expect(denied(policy('pods', { ...names.source.spec, match: { kinds: ['Pod'] } }))).toBe(false);
    expect(denied(names, { subResource: 'status' })).toBe(false);
    const del = withSpec({ match: { kinds: ['apps/Deployment'], operations: ['DELETE'] } });
    // A DELETE is checked against the old object.
    expect(denied(del, { operation: 'DELETE', object: null, oldObject: bad })).toBe(true);
  });

  it('never in kube-system or annex’s own namespace', () => {
    expect(denied(names, { namespace: 'kube-system' })).toBe(false);
    expect(denied(names, { namespace: 'annex-system' })).toBe(false);
    expect(denied(names, { namespace: 'tools' }, { annexNamespace: 'tools' })).toBe(false);
    expect(denied(names, { namespace: 'annex-system' }, { annexNamespace: 'tools' })).toBe(true);
  });

  it('namespaces, namespaceSelector, objectSelector and exclude', () => {
    const inShop = withSpec({ match: { kinds: ['apps/Deployment'], namespaces: ['shop'] } });
    expect(denied(inShop)).toBe(true);
    expect(denied(inShop, { namespace: 'dev' })).toBe(false);

    const prod = withSpec({
      match: { kinds: ['apps/Deployment'], namespaceSelector: { matchLabels: { env: 'prod' } } },
    });
    expect(denied(prod)).toBe(false);
    expect(denied(prod, {}, { namespaceLabels: { env: 'prod' } })).toBe(true);
    const byName = withSpec({
      match: {
        kinds: ['apps/Deployment'],
        namespaceSelector: {
          matchExpressions: [
            { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['shop'] },
          ],
        },
      },
    });
    expect(denied(byName)).toBe(true); // the label the API server always sets

    const labelled = withSpec({
      match: { kinds: ['apps/Deployment'], objectSelector: { matchLabels: { team: 'a' } } },
    });
    expect(denied(labelled)).toBe(false);
    expect(
      denied(labelled, {
        object: { ...bad, metadata: { ...bad.metadata, labels: { team: 'a' } } },
      }),
    ).toBe(true);

    const exceptDev = withSpec({ exclude: { namespaces: ['dev'] } });
    expect(denied(exceptDev)).toBe(true);
    expect(denied(exceptDev, { namespace: 'dev' })).toBe(false);
    const exceptUpdates = withSpec({ exclude: { operations: ['UPDATE'] } });
    expect(denied(exceptUpdates, { operation: 'UPDATE' })).toBe(false);
    expect(denied(exceptUpdates)).toBe(true);
  });
});

describe('evaluate: mutation', () => {
  const requests = policy('requests', {
    match: { kinds: ['apps/Deployment'] },
    mutate: [
      {
        name: 'requests',
        path: '$.spec.template.spec.containers[*]',
        setIfAbsent: { resources: { requests: { cpu: '100m', memory: '128Mi' } } },
      },
    ],
  });

  it('sets only absent fields, deeply, on every match; never changes the request object', () => {
    const d = deployment('web', ['a:1', 'b:1']);
    const containers = (d.spec as { template: { spec: { containers: Record<string, unknown>[] } } })
      .template.spec.containers;
    containers[1]!.resources = { requests: { cpu: '1' }, limits: { cpu: '2' } };
    const before = structuredClone(d);
    const e = evaluate([requests], request(d));
    expect(d).toEqual(before);
    const out = (
      e.mutated?.spec as typeof d.spec & { template: { spec: { containers: object[] } } }
    ).template.spec.containers;
    expect(out[0]).toEqual({
      name: 'c0',
      image: 'a:1',
      resources: { requests: { cpu: '100m', memory: '128Mi' } },
    });
    expect(out[1]).toEqual({
      name: 'c1',
      image: 'b:1',
      resources: { requests: { cpu: '1', memory: '128Mi' }, limits: { cpu: '2' } },
    });
    expect(e.allowed).toBe(true);
    // Nothing left to set: no mutated object.
    expect(evaluate([requests], request(e.mutated as KubeObject)).mutated).toBeUndefined();
  });

  it('runs before validation: a policy requiring requests passes once another sets them', () => {
    const need = policy('need', {
      match: { kinds: ['apps/Deployment'] },
      validate: [
        {
          name: 'r',
          path: '$.spec.template.spec.containers[*].resources.requests',
          required: true,
        },
      ],
    });
    expect(evaluate([need], request(deployment('web', ['a:1']))).allowed).toBe(false);
    expect(evaluate([need, requests], request(deployment('web', ['a:1']))).allowed).toBe(true);
  });

  it("podTemplateDefaults applies the API server's pod-template defaults", () => {
    const p = policy('d', {
      match: { kinds: ['apps/Deployment'] },
      mutate: [{ name: 'd', path: '$.spec.template', podTemplateDefaults: true }],
    });
    const e = evaluate([p], request(deployment('web', ['a:1'])));
    const tpl = (e.mutated?.spec as { template: { spec: Record<string, unknown> } }).template;
    expect(tpl.spec).toMatchObject({
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      terminationGracePeriodSeconds: 30,
      schedulerName: 'default-scheduler',
      securityContext: {},
    });
    expect((tpl.spec.containers as object[])[0]).toMatchObject({
      terminationMessagePath: '/dev/termination-log',
      imagePullPolicy: 'IfNotPresent',
    });
    expect(evaluate([p], request(e.mutated as KubeObject)).mutated).toBeUndefined();
  });
});

describe('evaluate: evaluation errors follow failurePolicy', () => {
  const throwing = (failurePolicy: 'Fail' | 'Ignore') =>
    policy('f', {
      match: { kinds: ['apps/Deployment'] },
      failurePolicy,
      validate: [
        { name: 'deep', path: '$.spec.template.spec.containers[?(@.x.y.z)]', forbidden: true },
      ],
    });

  it('Fail: denied with an Internal error naming the rule', () => {
    const e = evaluate([throwing('Fail')], request(deployment('web', ['a:1'])));
    expect(e.allowed).toBe(false);
    expect(e.status?.details?.causes?.[0]?.field).toBe('spec.template.spec.containers[?(@.x.y.z)]');
    expect(e.status?.details?.causes?.[0]?.message).toMatch(
      /^Internal error: rule "deep": .*reading 'y'/,
    );
  });

  it('Ignore: allowed, nothing recorded', () => {
    expect(evaluate([throwing('Ignore')], request(deployment('web', ['a:1'])))).toEqual({
      allowed: true,
      warnings: [],
      decisions: [],
      matched: ['f'],
    });
  });

  it('a mutate rule matching a non-object is an evaluation error', () => {
    const p = policy('m', {
      match: { kinds: ['apps/Deployment'] },
      mutate: [{ name: 'm', path: '$.metadata.name', setIfAbsent: { a: 1 } }],
    });
    const e = evaluate([p], request(deployment('web', ['a:1'])));
    expect(e.allowed).toBe(false);
    expect(e.mutated).toBeUndefined();
    expect(e.status?.details?.causes?.[0]?.message).toBe(
      'Internal error: rule "m": metadata.name is not an object',
    );
  });
});
