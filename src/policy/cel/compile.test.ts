import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { compilePolicy } from '../compile.js';
import { celStatus, compileToCel, explainCel, type CelObjects } from './index.js';
import { re2Pattern } from './regex.js';

const policy = (spec: Record<string, unknown>, name = 'p') =>
  compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec: { match: { kinds: ['apps/Deployment'] }, ...spec },
  });
const rule = (r: Record<string, unknown>) => policy({ validate: [{ name: 'r', ...r }] });
const reasonOf = (r: Record<string, unknown>) => {
  const out = compileToCel(rule(r));
  return 'reason' in out ? out.reason : undefined;
};
const demo = (f: string) =>
  compilePolicy(parse(readFileSync(join(import.meta.dirname, '../../../policies', f), 'utf8')));

describe('compileToCel: the generated objects', () => {
  it('workload-names: VAP + binding, matchConstraints from match, kube-system and annex excluded', () => {
    const out = compileToCel(demo('workload-names.yaml')) as CelObjects;
    const vap = out.vap as any;
    expect(vap.metadata).toEqual({
      name: 'annex-workload-names',
      labels: {
        'app.kubernetes.io/managed-by': 'annex',
        'policy.annex.dev/policy': 'workload-names',
      },
    });
    expect(vap.spec.failurePolicy).toBe('Fail');
    expect(vap.spec.matchConstraints.matchPolicy).toBe('Equivalent');
    expect(vap.spec.matchConstraints.namespaceSelector).toEqual({
      matchExpressions: [
        {
          key: 'kubernetes.io/metadata.name',
          operator: 'NotIn',
          values: ['kube-system', 'annex-system'],
        },
      ],
    });
    expect(vap.spec.matchConstraints.resourceRules[0]).toEqual({
      apiGroups: [''],
      apiVersions: ['v1'],
      operations: ['CREATE'],
      resources: ['pods'],
    });
    expect(vap.spec.variables.at(1).expression).toContain('format.dns1123Label().validate(');
    expect(vap.spec.validations).toHaveLength(1);
    expect(out.binding).toMatchObject({
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'annex-workload-names-binding' },
      spec: { policyName: 'annex-workload-names', validationActions: ['Deny'] },
    });
  });

  it('namespaces, exclude, selectors and actions', () => {
    const out = compileToCel(
      policy({
        match: {
          kinds: ['apps/Deployment'],
          namespaces: ['shop'],
          objectSelector: { matchLabels: { a: 'b' } },
        },
        exclude: { kinds: ['Pod'] },
        actions: ['Warn', 'Audit'],
        failurePolicy: 'Ignore',
        validate: [{ name: 'r', path: '$.metadata.name', nameRule: 'dns1123Label' }],
      }),
      { annexNamespace: 'ops' },
    ) as CelObjects;
    const mc = (out.vap as any).spec.matchConstraints;
    expect(mc.namespaceSelector.matchExpressions).toEqual([
      { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system', 'ops'] },
      { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['shop'] },
    ]);
    expect(mc.resourceRules[0].scope).toBe('Namespaced');
    expect(mc.objectSelector).toEqual({ matchLabels: { a: 'b' } });
    expect(mc.excludeResourceRules[0].resources).toEqual(['pods']);
    expect((out.vap as any).spec.failurePolicy).toBe('Ignore');
    expect((out.binding as any).spec.validationActions).toEqual(['Warn', 'Audit']);
  });

  it('map entries are indexed, object fields named as Kubernetes escapes keywords', () => {
    const out = compileToCel(
      policy({
        validate: [
          { name: 'a', path: '$.metadata.labels.namespace', required: true },
          { name: 'b', path: '$.metadata.namespace', required: true },
        ],
      }),
    ) as CelObjects;
    const [, a, b] = (out.vap as any).spec.variables.map(
      (v: { expression: string }) => v.expression,
    );
    expect(a).toContain('"namespace" in variables.target.metadata.labels');
    expect(b).toContain('has(variables.target.metadata.__namespace__)');
  });

  it('explainCel: per rule, where it runs and why', () => {
    const p = policy({
      validate: [
        { name: 'a', path: '$.metadata.name', nameRule: 'dns1123Label' },
        { name: 'b', path: '$..image', required: true },
      ],
    });
    expect(explainCel(p)).toEqual([
      {
        rule: 'a',
        kind: 'validate',
        runsIn: 'webhook',
        reason:
          'the policy runs in the webhook: rule "b" runs in the webhook: JSONPath $..image: recursive descent (..) has no CEL form',
      },
      {
        rule: 'b',
        kind: 'validate',
        runsIn: 'webhook',
        reason: 'JSONPath $..image: recursive descent (..) has no CEL form',
      },
    ]);
    expect(explainCel(demo('workload-names.yaml'))).toEqual([
      { rule: 'dns-label', kind: 'validate', runsIn: 'ValidatingAdmissionPolicy' },
    ]);
  });

  it('celStatus: who enforces a policy, and why', () => {
    expect(celStatus(demo('workload-names.yaml'))).toEqual({
      enforcedBy: 'ValidatingAdmissionPolicy',
    });
    expect(celStatus(demo('pinned-images.yaml'))).toEqual({
      enforcedBy: 'webhook',
      reason:
        'rule "containers" runs in the webhook: JSONPath $..containers[*].image: recursive descent (..) has no CEL form',
    });
  });
});

describe('compileToCel: mutate rules → MutatingAdmissionPolicy', () => {
  it('setIfAbsent: JSONPatch add ops, CREATE/UPDATE only, a binding', () => {
    const out = compileToCel(
      policy({
        match: { kinds: ['apps/Deployment'], operations: ['CREATE', 'DELETE', 'UPDATE'] },
        mutate: [
          {
            name: 'requests',
            path: '$.spec.template.spec.containers[*]',
            setIfAbsent: { resources: { requests: { cpu: '100m' } } },
          },
        ],
      }),
    ) as CelObjects;
    expect(out.vap).toBeUndefined();
    const map = out.map as any;
    expect(map.kind).toBe('MutatingAdmissionPolicy');
    expect(map.spec.reinvocationPolicy).toBe('Never');
    expect(map.spec.matchConstraints.resourceRules[0].operations).toEqual(['CREATE', 'UPDATE']);
    expect(map.spec.mutations[0].patchType).toBe('JSONPatch');
    const expr = map.spec.mutations[0].jsonPatch.expression as string;
    expect(expr).toContain("JSONPatch{op: 'add', path: ");
    expect(expr).toContain('value: {"requests": {"cpu": "100m"}}');
    expect(out.mapBinding).toMatchObject({
      kind: 'MutatingAdmissionPolicyBinding',
      spec: { policyName: 'annex-p' },
    });
  });

  it('what stays on the webhook', () => {
    const reason = (m: Record<string, unknown>) =>
      (compileToCel(policy({ mutate: [{ name: 'm', ...m }] })) as { reason: string }).reason;
    expect(reason({ path: '$.spec.template', podTemplateDefaults: true })).toBe(
      'mutate rule "m" runs in the webhook: podTemplateDefaults (the API server\'s pod-template defaults) have no CEL form',
    );
    expect(reason({ path: '$..containers[*]', setIfAbsent: { a: 1 } })).toContain(
      'recursive descent (..)',
    );
    expect(reason({ path: '$.metadata.labels[*]', setIfAbsent: { a: 1 } })).toContain(
      '[*] over a map',
    );
    expect(reason({ path: '$.metadata', setIfAbsent: { labels: { a: null } } })).toContain(
      'no CEL literal',
    );
  });
});

describe('compileToCel: what stays on the webhook ({ reason })', () => {
  it.each([
    [{ path: '$..name', nameRule: 'dns1123Label' }, 'recursive descent (..)'],
    [
      { path: '$.spec.template.spec.containers[?(@.name == "a")].image', required: true },
      'a filter expression',
    ],
    [{ path: '$.spec.template.spec.containers[0].image', required: true }, 'an index or slice'],
    [{ path: '$.spec.template.spec.containers[0:2]', required: true }, 'an index or slice'],
    [{ path: '$.spec["paused","replicas"]', required: true }, 'the step'],
    [{ path: '$', required: true }, 'the whole object'],
    [{ path: '$[*]', required: true }, 'a wildcard at the root'],
    [
      { path: '$.metadata.name', nameRule: 'qualifiedName' },
      "63 bytes' where the webhook says 'characters'",
    ],
    [{ path: '$.metadata.name', nameRule: 'labelKey' }, 'no labelKey'],
    [{ path: '$.metadata.name', nameRule: 'pathSegment' }, 'no pathSegment'],
    [{ path: '$.spec', schema: { type: 'object' } }, 'schema type "object"'],
    [{ path: '$.spec', schema: { type: ['string', 'null'] } }, 'schema type ["string","null"]'],
    [{ path: '$.spec', schema: { required: ['a'] } }, 'the schema keyword required'],
    [
      { path: '$.spec', schema: { properties: { a: { type: 'string' } } } },
      'the schema keyword properties',
    ],
    [{ path: '$.metadata.labels.x', schema: { minItems: 1 } }, 'the schema keyword minItems'],
    [
      { path: '$.metadata.labels.x', schema: { exclusiveMinimum: 1 } },
      'the schema keyword exclusiveMinimum',
    ],
    [{ path: '$.metadata.labels.x', schema: { const: { a: 1 } } }, 'a const that is not'],
    [{ path: '$.metadata.labels.x', schema: { enum: ['a', null] } }, 'an enum value that is not'],
    [{ path: '$.metadata.labels.x', schema: { pattern: '^(?!latest$)' } }, 'a lookaround'],
    [{ path: '$.metadata.labels.x', schema: { pattern: '(a)\\1' } }, 'a backreference'],
    [{ path: '$.metadata.labels.x', schema: { pattern: '\\s' } }, '\\s (Unicode spaces'],
  ])('%j → %s', (r, why) => {
    expect(reasonOf(r)).toContain(why);
  });

  it('whole-policy reasons: mutations, Deny with Warn, two rules on one path, exclude selectors', () => {
    const reason = (p: ReturnType<typeof policy>) => (compileToCel(p) as { reason: string }).reason;
    expect(reason(demo('default-requests.yaml'))).toMatch(
      /^mutate rule "requests" runs in the webhook/,
    );
    const v = [{ name: 'r', path: '$.metadata.name', nameRule: 'dns1123Label' }];
    expect(reason(policy({ actions: ['Deny', 'Warn'], validate: v }))).toContain('Deny and Warn');
    expect(
      reason(policy({ validate: [...v, { name: 's', path: '$.metadata.name', required: true }] })),
    ).toContain('a second rule on the path $.metadata.name');
    expect(
      reason(policy({ exclude: { objectSelector: { matchLabels: { a: 'b' } } }, validate: v })),
    ).toContain('exclude with a namespaceSelector or objectSelector');
    expect(
      reason(policy({ match: { kinds: ['Namespace'], namespaces: ['a'] }, validate: v })),
    ).toContain('match.namespaces with rules covering Namespace objects');
  });
});

describe('re2Pattern', () => {
  it.each([
    ['^[a-z]+(?:\\.[a-z]+)?$', '^[a-z]+(?:\\.[a-z]+)?$'],
    ['^a.b$', '^a[^\\n\\r\\x{2028}\\x{2029}]b$'],
    ['[.]\\d{2,3}\\w|\\bx', '[.]\\d{2,3}\\w|\\bx'],
  ])('%s → %s', (p, re2) => {
    expect(re2Pattern(p)).toEqual({ re2 });
  });
  it.each(['(?=a)', '(?<!a)b', '(?<n>a)', '\\k<n>', '\\u00e9', 'é', '[]', '[^]', '\\p{L}', 'a\\'])(
    '%s is refused',
    (p) => {
      expect(re2Pattern(p)).toHaveProperty('reason');
    },
  );
});
