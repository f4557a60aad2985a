import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AdmissionRequest } from '../admission/review.js';
import { compilePolicy } from './compile.js';
import { evaluate } from './evaluate.js';
import { decide, mutateWith, PolicySet, unionRules } from './engine.js';
import type { AdmissionPolicy } from './types.js';

const dir = join(import.meta.dirname, '..', '..', 'policies');
const demo = readdirSync(dir).map(
  (f) => parse(readFileSync(join(dir, f), 'utf8')) as AdmissionPolicy,
);

const deploymentRequest = (
  name: string,
  image: string,
  labels?: Record<string, string>,
): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace: 'shop',
  name,
  operation: 'CREATE',
  object: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', ...(labels ? { labels } : {}) },
    spec: { template: { spec: { hostNetwork: true, containers: [{ name: 'c', image }] } } },
  },
});

describe('unionRules', () => {
  it('merges resources of rules with the same operations, groups, versions and scope', () => {
    expect(
      unionRules([
        {
          operations: ['CREATE'],
          apiGroups: ['apps'],
          apiVersions: ['v1'],
          resources: ['deployments'],
        },
        {
          operations: ['CREATE'],
          apiGroups: ['apps'],
          apiVersions: ['v1'],
          resources: ['daemonsets', 'deployments'],
        },
        {
          operations: ['UPDATE', 'CREATE'],
          apiGroups: [''],
          apiVersions: ['v1'],
          resources: ['pods'],
          scope: 'Namespaced',
        },
      ]),
    ).toEqual([
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [''],
        apiVersions: ['v1'],
        scope: 'Namespaced',
        resources: ['pods'],
      },
      {
        operations: ['CREATE'],
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        scope: '*',
        resources: ['daemonsets', 'deployments'],
      },
    ]);
    expect(unionRules([])).toEqual([]);
  });
});

describe('PolicySet', () => {
  it('compiles once per generation and keeps a policy that does not compile out, with its message', () => {
    const set = new PolicySet();
    const p = { ...demo[0]!, metadata: { ...demo[0]!.metadata, generation: 1, uid: 'a' } };
    const first = set.put(p);
    expect(set.put({ ...p, status: { ready: true } })).toBe(first);
    expect(set.put({ ...p, metadata: { ...p.metadata, generation: 2 } })).not.toBe(first);
    const broken = structuredClone(p);
    broken.metadata.name = 'broken';
    broken.spec.validate = [{ name: 'x', path: '$[', required: true }];
    const c = set.put(broken);
    expect(c.error).toMatch(/^AdmissionPolicy "broken": rule "x": /);
    expect(set.policies.map((x) => x.name)).toEqual([p.metadata.name]);
    set.delete(p.metadata.name);
    expect(set.rules()).toEqual([]);
  });
});

describe('decide and mutateWith (the live webhooks)', () => {
  const policies = demo.map(compilePolicy).sort((a, b) => (a.name < b.name ? -1 : 1));
  const cases = [
    deploymentRequest('web.front', 'nginx:latest'),
    deploymentRequest('web', 'nginx:1.27', { 'app.kubernetes.io/name': 'web' }),
    deploymentRequest('api', 'nginx'),
  ];

  it.each(cases)('answer as evaluate() does for the whole set ($name)', (req) => {
    const whole = evaluate(policies, req);
    const mutated = mutateWith(policies, req, {});
    const after = mutated.allowed && mutated.object ? { ...req, object: mutated.object } : req;
    expect(mutated.allowed && mutated.object).toEqual(whole.mutated ?? false);
    const { verdict, decisions } = decide(policies, after, {});
    expect(decisions).toEqual(whole.decisions);
    expect(verdict.allowed).toBe(whole.allowed);
    expect(verdict.warnings ?? []).toEqual(whole.warnings);
    if (!verdict.allowed) expect(verdict.status).toEqual(whole.status);
  });
});
