import { describe, expect, it } from 'vitest';
import { groupOf, podSpecReferences, ruleForKind, ruleForReference } from './kinds.js';
import { validateObjectName } from './validate.js';

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
