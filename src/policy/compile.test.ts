import { describe, expect, it } from 'vitest';
import { compilePolicy } from './compile.js';
import { checkPath, fieldOfPath, jsonPathMatches, matchesOf, type PathMatch } from './paths.js';
import { PolicyCompileError } from './types.js';

const policy = (spec: Record<string, unknown>, name = 'p') => ({
  apiVersion: 'policy.annex.dev/v1alpha1',
  kind: 'AdmissionPolicy',
  metadata: { name, generation: 3 },
  spec,
});

const match = { kinds: ['apps/Deployment', 'Pod'] };

/** The compile error's message, or 'compiled'. */
function fault(spec: Record<string, unknown>): string {
  try {
    compilePolicy(policy(spec));
    return 'compiled';
  } catch (e) {
    expect(e).toBeInstanceOf(PolicyCompileError);
    return (e as Error).message;
  }
}

describe('compilePolicy', () => {
  it('resolves kinds into webhook rules, name rules into validators, and defaults', () => {
    const p = compilePolicy(
      policy({
        match,
        validate: [
          { name: 'names', path: '$.metadata.name', nameRule: 'dns1123Label' },
          { name: 'tags', path: '$..image', schema: { type: 'string', pattern: ':' } },
          { name: 'label', path: "$.metadata.labels['app']", required: true },
          { name: 'host', path: '$.spec.hostNetwork', forbidden: true, message: 'no' },
        ],
        mutate: [{ name: 'd', path: '$.spec.template', podTemplateDefaults: true }],
      }),
    );
    expect(p.name).toBe('p');
    expect(p.generation).toBe(3);
    expect(p.actions).toEqual(['Deny']);
    expect(p.failurePolicy).toBe('Fail');
    expect(p.rules).toEqual([
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        resources: ['deployments'],
      },
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        resources: ['pods'],
      },
    ]);
    expect(p.validate.map((r) => r.type)).toEqual(['nameRule', 'schema', 'required', 'forbidden']);
    expect(p.validate[0]).toMatchObject({ nameRule: 'dns1123-label' });
    expect(p.validate[3]?.message).toBe('no');
    expect(p.mutate[0]?.podTemplateDefaults).toBe(true);
    expect(p.exclude).toBeUndefined();
  });

  it('takes resource rules, operations and an exclude block with no kinds (every resource)', () => {
    const p = compilePolicy(
      policy({
        match: {
          resources: [{ apiGroups: ['example.com'], apiVersions: ['v1'], resources: ['widgets'] }],
          operations: ['CREATE'],
        },
        exclude: { namespaces: ['dev'] },
      }),
    );
    expect(p.rules).toEqual([
      {
        apiGroups: ['example.com'],
        apiVersions: ['v1'],
        resources: ['widgets'],
        operations: ['CREATE'],
      },
    ]);
    expect(p.exclude?.rules[0]?.resources).toEqual(['*', '*/*']);
    expect([...(p.exclude?.namespaces ?? [])]).toEqual(['dev']);
  });

  it.each([
    [
      { match: { kinds: ['Gadget'] } },
      'rule "match": match.kinds: "Gadget" is not a built-in kind',
    ],
    [{ match: {} }, 'rule "match": match: set kinds or resources'],
    [{}, "must have required property 'match'"],
    [
      { match, actions: ['Block'] },
      'spec.actions[0]: must be equal to one of the allowed values: "Deny", "Warn", "Audit"',
    ],
    [
      { match, validate: [{ name: 'n', path: '$.metadata.name', nameRule: 'dnsLabel' }] },
      'rule "n": unknown name rule "dnsLabel": expected one of dns1123Subdomain, dns1123Label, dns1035Label, qualifiedName, labelKey, labelValue, pathSegment',
    ],
    [
      {
        match,
        validate: [
          { name: 'n', path: '$.metadata.name', nameRule: 'dns1123Label', required: true },
        ],
      },
      'rule "n": set exactly one of nameRule, schema, required, forbidden',
    ],
    [
      { match, validate: [{ name: 'n', path: '$.metadata.name' }] },
      'rule "n": set exactly one of nameRule, schema, required, forbidden',
    ],
    [
      { match, validate: [{ name: 'n', path: '$.metadata.name', nameRul: 'dns1123Label' }] },
      'rule "n": spec.validate[0]: unknown field "nameRul"',
    ],
    [
      { match, validate: [{ name: 't', path: '$..image', schema: { type: 'strin' } }] },
      'rule "t": schema: schema is invalid: data/type must be equal to one of the allowed values',
    ],
    [
      { match, validate: [{ name: 't', path: '$.metadata.name', schema: { patern: 'x' } }] },
      'rule "t": schema: strict mode: unknown keyword: "patern"',
    ],
    [
      { match, validate: [{ name: 'j', path: '$.spec.[', required: true }] },
      'rule "j": path "$.spec.[": expected a property name at character 8',
    ],
    [
      { match, validate: [{ name: 'j', path: 'spec.name', required: true }] },
      'rule "j": path "spec.name": must start with "$"',
    ],
    [
      { match, validate: [{ name: 'j', path: '$.a[?(@.b ==)]', required: true }] },
      'rule "j": path "$.a[?(@.b ==)]": expression "?(@.b ==)": Expected expression after ==',
    ],
    [
      {
        match,
        validate: [
          { name: 'j', path: '$.metadata.name', required: true },
          { name: 'j', path: '$.b', required: true },
        ],
      },
      'rule "j": duplicate validate rule name',
    ],
    [
      { match, mutate: [{ name: 'm', path: '$.spec' }] },
      'rule "m": set setIfAbsent or podTemplateDefaults',
    ],
    [
      {
        match,
        validate: Array.from({ length: 65 }, (_, i) => ({
          name: `r${i}`,
          path: '$.metadata.name',
          required: true,
        })),
      },
      'spec.validate: must NOT have more than 64 items',
    ],
  ])('refuses %j: %s', (spec, expected) => {
    expect(fault(spec)).toContain(expected);
  });

  it('refuses what is not an AdmissionPolicy, or has no name', () => {
    expect(() => compilePolicy({ apiVersion: 'v1', kind: 'ConfigMap' })).toThrow(
      'expected apiVersion policy.annex.dev/v1alpha1, kind AdmissionPolicy',
    );
    expect(() => compilePolicy({ ...policy({ match }), metadata: {} })).toThrow(
      'metadata.name is required',
    );
    expect(() => compilePolicy(null)).toThrow(PolicyCompileError);
  });

  it('names the policy and the rule in the error', () => {
    try {
      compilePolicy(
        policy({ match, validate: [{ name: 'j', path: 'x', required: true }] }, 'tags'),
      );
      expect.unreachable();
    } catch (e) {
      expect(e).toMatchObject({ policy: 'tags', rule: 'j' });
      expect((e as Error).message).toMatch(/^AdmissionPolicy "tags": rule "j": path "x": /);
    }
  });

  it('refuses a spec nested too deep with a PolicyCompileError (fuzz seed)', () => {
    // Was a RangeError from deep inside (the message quoting a 20,000-level nameRule), which
    // PolicySet and `annex check` do not expect from compilePolicy.
    const deep = JSON.parse('{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000));
    const spec = { match, validate: [{ name: 'n', path: '$.metadata.name', nameRule: deep }] };
    expect(() => compilePolicy(policy(spec))).toThrow(
      'AdmissionPolicy "p": rule "spec": nested more than 100 levels deep',
    );
    let schema: object = { type: 'string' };
    for (let i = 0; i < 60; i++) schema = { not: schema };
    expect(() =>
      compilePolicy(policy({ match, validate: [{ name: 's', path: '$.metadata.name', schema }] })),
    ).not.toThrow();
  });

  it('compiles the same schema with an $id again (a new generation of the policy)', () => {
    const spec = {
      match,
      validate: [
        {
          name: 's',
          path: '$.metadata.name',
          schema: { $id: 'https://x.example/s', type: 'string' },
        },
      ],
    };
    compilePolicy(policy(spec));
    const again = compilePolicy(policy(structuredClone(spec)));
    const rule = again.validate[0];
    expect(rule?.type === 'schema' && rule.validate(1)).toBe(false);
    expect(rule?.type === 'schema' && rule.validate('x')).toBe(true);
  });
});

describe('JSONPath', () => {
  it.each([
    '$',
    '$.metadata.name',
    '$.spec.template.spec.containers[*].image',
    "$.metadata.labels['app.kubernetes.io/name']",
    '$.metadata.labels["a b"]',
    '$..image',
    '$..[0]',
    '$.spec.containers[0,1]',
    '$.spec.containers[-1:]',
    '$.spec.containers[?(@.name == "web")].image',
    '$.spec.containers[(@.length-1)]',
    '$.spec.*',
  ])('accepts %s', (p) => {
    expect(checkPath(p)).toBeUndefined();
  });

  it.each([
    ['', 'must start with'],
    ['metadata.name', 'must start with'],
    ['$.spec.[', 'expected a property name'],
    ['$.spec[', 'is not closed'],
    ['$.spec.', 'expected a property name'],
    ['$.a[?(@.b ==', 'is not closed'],
    ['$.a[?(@.b ==)]', 'Expected expression'],
    ['$.a[b c]', 'is not a key, index, slice'],
    ["$.a['b]", 'is not closed'],
    ['$ .a', 'unexpected " "'],
  ])('refuses %j', (p, why) => {
    expect(checkPath(p)).toContain(why);
  });

  it('reports each match with its field path as apimachinery prints it', () => {
    const obj = {
      metadata: { labels: { 'app.kubernetes.io/name': 'w', app: 'x' } },
      spec: {
        containers: [
          { image: 'a', resources: { limits: { cpu: '1' } } },
          { image: 'b', resources: { limits: { cpu: '2' } } },
        ],
      },
      data: { '0': 'zero' },
    };
    expect(matchesOf('$.spec.containers[*].image', obj).map((m) => m.field)).toEqual([
      'spec.containers[0].image',
      'spec.containers[1].image',
    ]);
    expect(matchesOf('$.metadata.labels.*', obj).map((m) => m.field)).toEqual([
      'metadata.labels[app.kubernetes.io/name]',
      'metadata.labels[app]',
    ]);
    expect(matchesOf('$..limits.cpu', obj).map((m) => m.field)).toEqual([
      'spec.containers[0].resources.limits[cpu]',
      'spec.containers[1].resources.limits[cpu]',
    ]);
    // A map key that looks like an index is still a key.
    expect(matchesOf("$.data['0']", obj)).toMatchObject([
      { field: 'data[0]', segments: ['data', '0'] },
    ]);
    expect(matchesOf('$', obj)).toMatchObject([{ field: '', parent: null, key: null }]);
    expect(fieldOfPath("$.metadata.labels['app.kubernetes.io/name']")).toBe(
      'metadata.labels[app.kubernetes.io/name]',
    );
    expect(fieldOfPath('$.spec.containers[*].resources')).toBe('spec.containers[*].resources');
    expect(fieldOfPath('$.spec.containers[0].image')).toBe('spec.containers[0].image');
  });

  it('the direct walk of plain paths and descents finds what jsonpath-plus finds, in the same order', () => {
    const objects = [
      {
        metadata: { name: 'n', labels: { 'app.kubernetes.io/name': 'w', a: null } },
        spec: {
          containers: [{ image: 'a', ports: [{ p: 1 }, { p: 2 }] }, { image: 'b' }, 'x', null],
          'my-key': { '0': 'zero', 1: 'one' },
        },
      },
      { spec: { containers: { notAList: true } }, metadata: 'str' },
      {},
      {
        spec: {
          replicas: 3,
          hostPID: false,
          template: {
            metadata: { labels: { a: 'b', length: 'l' } },
            spec: {
              hostPID: true,
              initContainers: [{ name: 'i', image: 'busybox' }],
              containers: [
                { name: 'a', image: 'x:1', securityContext: { privileged: false } },
                { name: 'b', image: null, containers: [{ image: 'nested' }] },
                null,
                [{ image: 'in-array' }, 'str', 7],
              ],
              volumes: [{ name: 'v', image: { image: 'deep' } }],
            },
          },
        },
        status: null,
        list: [[1, [2, { hostPID: 'x' }]], 'image', { '0': { image: 'k0' } }],
      },
    ];
    const paths = [
      '$',
      '$.metadata.name',
      '$.metadata.labels.*',
      "$.metadata.labels['app.kubernetes.io/name']",
      '$.metadata.labels["a"]',
      '$.spec.containers[*].image',
      '$.spec.containers[*].ports[*].p',
      '$.spec.containers[1]',
      '$.spec.containers[7]',
      '$.spec.containers.length',
      '$.spec.containers[*]',
      "$.spec.my-key['0']",
      '$.spec.my-key[1]',
      '$.spec.*.*',
      '$[*]',
      '$.missing.deeper',
      '$..hostPID',
      '$..image',
      "$..['image']",
      '$..containers[*]',
      '$..containers[*].image',
      '$..containers.*.image',
      '$..initContainers[*].image',
      '$..containers[*].securityContext.privileged',
      '$..labels.*',
      '$..*',
      '$..[*]',
      '$..[*].image',
      '$.spec..image',
      '$..spec..image',
      '$..containers..image',
      '$..length',
      '$..containers[0]',
      '$..missing',
    ];
    // The field too: the direct walk renders it when read.
    const plain = (ms: PathMatch[]) => ms.map((m) => ({ ...m, field: m.field }));
    for (const obj of objects) {
      // One evaluation's descent indexes, shared by its paths as evaluate() shares them.
      const descents = new WeakMap();
      for (const p of paths) {
        const expected = plain(jsonPathMatches(p, obj));
        expect(plain(matchesOf(p, obj)), `${p} on ${JSON.stringify(obj)}`).toEqual(expected);
        expect(plain(matchesOf(p, obj, descents)), `${p}, shared indexes`).toEqual(expected);
      }
    }
  });
});
