import { describe, expect, it } from 'vitest';
import { groupOf, podSpecReferences, ruleForKind, ruleForReference } from './kinds.js';
import { validateObjectMeta, validateObjectName } from './validate.js';

describe('ruleForKind', () => {
  it('maps the kinds named in the reference', () => {
    expect(ruleForKind('', 'ConfigMap').rule).toBe('dns1123-subdomain');
    expect(ruleForKind('', 'Namespace').rule).toBe('dns1123-label');
    expect(ruleForKind('', 'Service').rule).toBe('dns1123-label');
    expect(ruleForKind('apps', 'StatefulSet').rule).toBe('dns1123-label');
    expect(ruleForKind('apps', 'Deployment').rule).toBe('dns1123-subdomain');
    expect(ruleForKind('policy', 'PodDisruptionBudget').rule).toBe('path-segment');
    expect(ruleForKind('rbac.authorization.k8s.io', 'ClusterRole').rule).toBe('path-segment');
    expect(ruleForKind('batch', 'CronJob').maxLength).toBe(52);
  });
  it('treats unknown kinds as custom resources (subdomain)', () => {
    expect(ruleForKind('example.com', 'Widget').rule).toBe('dns1123-subdomain');
  });
  it('distinguishes the core Event from events.k8s.io', () => {
    expect(ruleForKind('', 'Event').rule).toBe('path-segment');
    expect(ruleForKind('events.k8s.io', 'Event').rule).toBe('dns1123-subdomain');
  });
  it('groupOf splits apiVersion', () => {
    expect(groupOf('v1')).toBe('');
    expect(groupOf('apps/v1')).toBe('apps');
  });
});

describe('references', () => {
  it('serviceAccountName and secret refs follow the referenced kind', () => {
    const sa = podSpecReferences.find((r) => r.path === 'serviceAccountName');
    expect(sa && ruleForReference(sa)).toBe('dns1123-subdomain');
    const pulls = podSpecReferences.find((r) => r.path === 'imagePullSecrets[].name');
    expect(pulls?.kind).toBe('Secret');
    expect(podSpecReferences.some((r) => r.kind === 'PersistentVolumeClaim')).toBe(true);
  });
});

describe('validateObjectName', () => {
  it('renders the StatefulSet dots error as a field message', () => {
    expect(validateObjectName('apps', 'StatefulSet', 'web.front')).toEqual([
      {
        field: 'metadata.name',
        value: 'web.front',
        detail: 'must not contain dots',
        message: 'metadata.name: Invalid value: "web.front": must not contain dots',
      },
    ]);
  });
  it('adds the CronJob 52-character limit after the rule', () => {
    expect(validateObjectName('batch', 'CronJob', 'a'.repeat(52))).toEqual([]);
    expect(validateObjectName('batch', 'CronJob', 'a'.repeat(53)).map((e) => e.message)).toEqual([
      `metadata.name: Invalid value: "${'a'.repeat(53)}": must be no more than 52 characters`,
    ]);
  });
  it('reports generateName at metadata.generateName', () => {
    const errs = validateObjectName('', 'Service', 'Web-', { prefix: true });
    expect(errs.map((e) => e.field)).toEqual(['metadata.generateName']);
    expect(validateObjectName('', 'Service', 'web-', { prefix: true })).toEqual([]);
  });
});

describe('validateObjectMeta (measured on v1.37.2)', () => {
  const fields = (group: string, kind: string, meta: object) =>
    validateObjectMeta(group, kind, meta, 'bcdfg').errors.map((e) => `${e.field}: ${e.detail}`);
  it('an empty name without generateName is Required, for every kind', () => {
    for (const [g, k] of [
      ['', 'ConfigMap'],
      ['policy', 'PodDisruptionBudget'],
      ['rbac.authorization.k8s.io', 'Role'],
    ] as const) {
      const r = validateObjectMeta(g, k, { name: '', generateName: '' }, 'bcdfg');
      expect(r.errors.map((e) => e.message)).toEqual([
        'metadata.name: Required value: name or generateName is required',
      ]);
    }
  });
  it('judges the prefix, then the generated name', () => {
    expect(fields('', 'ConfigMap', { generateName: 'a.' })).toEqual([
      expect.stringMatching(/^metadata.generateName: a lowercase RFC 1123 subdomain/),
    ]);
    expect(fields('', 'Service', { generateName: 'A-' })).toEqual([
      expect.stringMatching(/^metadata.name: a lowercase RFC 1123 label/),
    ]);
  });
  it('cuts the base to 58 bytes: a fine CronJob prefix can give a name over 52', () => {
    expect(fields('batch', 'CronJob', { generateName: 'a'.repeat(47) })).toEqual([]);
    expect(fields('batch', 'CronJob', { generateName: 'a'.repeat(48) })).toEqual([
      'metadata.name: must be no more than 52 characters',
    ]);
    const long = validateObjectMeta('', 'ConfigMap', { generateName: 'a'.repeat(250) }, 'bcdfg');
    expect(long).toMatchObject({ name: `${'a'.repeat(58)}bcdfg`, generated: true, errors: [] });
  });
  it('RBAC refuses the prefixes . and ..; PDB only checks / and %', () => {
    const rbac = 'rbac.authorization.k8s.io';
    expect(fields(rbac, 'Role', { generateName: '..' })).toEqual([
      "metadata.generateName: may not be '..'",
    ]);
    expect(fields('policy', 'PodDisruptionBudget', { generateName: '..' })).toEqual([]);
    expect(fields('policy', 'PodDisruptionBudget', { generateName: 'a/' })).toEqual([
      "metadata.generateName: may not contain '/'",
      "metadata.name: may not contain '/'",
    ]);
  });
  it('the generic path-segment check runs only after the kind passes', () => {
    const tail = `${'a'.repeat(60)}/-`; // masked to a valid prefix, `/` cut from the name
    expect(fields('', 'ConfigMap', { generateName: tail })).toEqual([
      "metadata.generateName: may not contain '/'",
    ]);
  });
  it('a cut inside a character is kept as Go bytes', () => {
    const r = validateObjectMeta('', 'ConfigMap', { generateName: `${'a'.repeat(57)}日` }, 'bcdfg');
    expect(r.name).toBe(`${'a'.repeat(57)}\ufffdbcdfg`);
    expect(r.errors.at(-1)?.message).toContain(`"${'a'.repeat(57)}\\xe6bcdfg"`);
  });
});
