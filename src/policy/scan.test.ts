import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../core/types.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { scanKinds, scanObject, type ScanKind } from './scan.js';

function policy(name: string, spec: Record<string, unknown>): CompiledPolicy {
  return compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name },
    spec,
  });
}

const DEPLOYMENTS: ScanKind = {
  group: 'apps',
  version: 'v1',
  resource: 'deployments',
  kind: 'Deployment',
};

function deployment(name: string, image: string, podSpec: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop', uid: `uid-${name}` },
    spec: {
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'c', image }], ...podSpec },
      },
    },
  } as KubeObject;
}

const pinned = (actions: string[], extra: Record<string, unknown> = {}) =>
  policy(`pinned-${actions.join('-').toLowerCase()}`, {
    match: { kinds: ['apps/Deployment'] },
    actions,
    validate: [
      {
        name: 'tag',
        path: '$.spec.template.spec.containers[*].image',
        schema: { type: 'string', pattern: ':(?!latest$)[^:/]+$' },
        message: 'must be pinned',
      },
    ],
    ...extra,
  });

describe('scanKinds', () => {
  it('lists the kinds the policies match, once each; wildcards apart', () => {
    const p = policy('p', {
      match: { kinds: ['Pod', 'apps/Deployment'] },
      validate: [{ name: 'n', path: '$.metadata.name', nameRule: 'dns1123Label' }],
    });
    const wild = policy('w', {
      match: {
        resources: [{ apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }],
      },
      validate: [{ name: 'n', path: '$.metadata.name', required: true }],
    });
    const { kinds, unscannable } = scanKinds([p, wild, pinned(['Deny'])]);
    expect(kinds.map((k) => `${k.group}/${k.resource}:${k.kind}`)).toEqual([
      '/pods:Pod',
      'apps/deployments:Deployment',
    ]);
    expect(unscannable).toEqual(['w: */*/*']);
  });

  it('never Secrets: a report would quote their values to whoever reads reports', () => {
    const p = policy('s', {
      match: { kinds: ['Secret', 'ConfigMap'] },
      validate: [{ name: 'n', path: '$.metadata.name', nameRule: 'dns1123Label' }],
    });
    const { kinds, unscannable } = scanKinds([p]);
    expect(kinds.map((k) => k.kind)).toEqual(['ConfigMap']);
    expect(unscannable).toEqual([
      's: /v1/secrets (Secrets are never scanned: a report would quote their values)',
    ]);
  });

  it('leaves out policies with nothing to validate and DELETE-only policies', () => {
    const mutateOnly = policy('m', {
      match: { kinds: ['Pod'] },
      mutate: [{ name: 'l', path: '$.metadata', setIfAbsent: { labels: {} } }],
    });
    const deletes = policy('d', {
      match: { kinds: ['Pod'], operations: ['DELETE'] },
      validate: [{ name: 'n', path: '$.metadata.name', required: true }],
    });
    expect(scanKinds([mutateOnly, deletes]).kinds).toEqual([]);
  });
});

describe('scanObject', () => {
  it('one result per matching policy × rule: pass, fail (Deny, Audit), warn (Warn only)', () => {
    const policies = [pinned(['Deny']), pinned(['Audit']), pinned(['Warn'])];
    const ok = scanObject(policies, DEPLOYMENTS, deployment('web', 'nginx:1.27'), {});
    expect(ok.map((r) => r.result)).toEqual(['pass', 'pass', 'pass']);
    const bad = scanObject(policies, DEPLOYMENTS, deployment('web', 'nginx:latest'), {});
    expect(bad.map((r) => [r.policy, r.rule, r.result])).toEqual([
      ['pinned-deny', 'tag', 'fail'],
      ['pinned-audit', 'tag', 'fail'],
      ['pinned-warn', 'tag', 'warn'],
    ]);
    expect(bad[0]!.message).toBe(
      'spec.template.spec.containers[0].image: Invalid value: "nginx:latest": must be pinned',
    );
  });

  it('a policy that does not match the object gives no result; kube-system is never scanned', () => {
    const pods = policy('pods', {
      match: { kinds: ['Pod'] },
      validate: [{ name: 'n', path: '$.metadata.name', required: true }],
    });
    expect(scanObject([pods], DEPLOYMENTS, deployment('web', 'a:1'), {})).toEqual([]);
    const sys = deployment('web', 'a:latest');
    sys.metadata.namespace = 'kube-system';
    expect(scanObject([pinned(['Deny'])], DEPLOYMENTS, sys, {})).toEqual([]);
  });

  it('an UPDATE-only policy scans the object as an update onto itself', () => {
    const p = pinned(['Deny'], { match: { kinds: ['apps/Deployment'], operations: ['UPDATE'] } });
    const r = scanObject([p], DEPLOYMENTS, deployment('web', 'a:latest'), {});
    expect(r.map((x) => x.result)).toEqual(['fail']);
  });

  it('matchConditions not met: the rules are skipped', () => {
    const p = pinned(['Deny'], {
      matchConditions: [{ name: 'labelled', expression: 'has(object.metadata.labels)' }],
    });
    const r = scanObject([p], DEPLOYMENTS, deployment('web', 'a:latest'), {});
    expect(r).toEqual([
      { policy: p.name, rule: 'tag', result: 'skip', message: 'matchConditions not met' },
    ]);
  });

  it('the object as admission sees it: mutate rules first, then validation', () => {
    const p = policy('labels', {
      match: { kinds: ['apps/Deployment'] },
      mutate: [{ name: 'team', path: '$.metadata', setIfAbsent: { labels: { team: 'none' } } }],
      validate: [{ name: 'has-team', path: '$.metadata.labels.team', required: true }],
    });
    const r = scanObject([p], DEPLOYMENTS, deployment('web', 'a:1'), {});
    expect(r.map((x) => x.result)).toEqual(['pass']);
  });

  it("a workload's pod template is judged by Pod Security as a Pod would be", () => {
    const p = policy('pss', {
      match: { kinds: ['apps/Deployment'] },
      validate: [{ name: 'baseline', podSecurity: { level: 'baseline' } }],
    });
    const host = deployment('web', 'a:1', { hostNetwork: true });
    const [r] = scanObject([p], DEPLOYMENTS, host, {});
    expect(r).toMatchObject({ policy: 'pss', rule: 'baseline', result: 'fail' });
    expect(r!.message).toMatch(/host namespaces/);
    expect(scanObject([p], DEPLOYMENTS, deployment('web', 'a:1'), {})[0]!.result).toBe('pass');
  });

  it('a rule that cannot be evaluated is an error result', () => {
    const p = policy('deep', {
      match: { kinds: ['apps/Deployment'] },
      validate: [
        { name: 'deep', path: '$.spec.template.spec.containers[?(@.x.y.z)]', forbidden: true },
      ],
    });
    const [r] = scanObject([p], DEPLOYMENTS, deployment('web', 'a:1'), {});
    expect(r).toMatchObject({ rule: 'deep', result: 'error' });
  });

  it('never changes the scanned object', () => {
    const o = deployment('web', 'a:latest');
    const before = JSON.stringify(o);
    const p = policy('labels', {
      match: { kinds: ['apps/Deployment'] },
      mutate: [{ name: 'team', path: '$.metadata', setIfAbsent: { labels: { team: 'x' } } }],
      validate: [{ name: 'has-team', path: '$.metadata.labels.team', required: true }],
    });
    scanObject([p, pinned(['Deny'])], DEPLOYMENTS, o, {});
    expect(JSON.stringify(o)).toBe(before);
  });
});
