import { describe, expect, it } from 'vitest';
import { register } from 'prom-client';
import type { AdmissionRequest } from '../admission/review.js';
import { DecisionLog } from './decision-log.js';
import type { PolicyDecision } from './types.js';

const request = (over: Partial<AdmissionRequest> = {}): AdmissionRequest => ({
  uid: 'u1',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  namespace: 'shop',
  name: 'web.front',
  operation: 'CREATE',
  userInfo: { username: 'jane', groups: ['dev'] },
  object: {
    metadata: { name: 'web.front', namespace: 'shop' },
    spec: { template: { spec: { containers: [{ image: 'SECRET-IMAGE' }] } } },
  },
  ...over,
});

const decision = (action: PolicyDecision['action'] = 'Deny'): PolicyDecision => ({
  policy: 'pinned-images',
  rule: 'no-latest',
  action,
  causes: [
    {
      field: 'spec.template.spec.containers[0].image',
      message: 'Invalid value: "SECRET-IMAGE": must be pinned',
    },
  ],
});

describe('DecisionLog', () => {
  it('records who, what and which rule, never the object or the cause text', () => {
    const log = new DecisionLog({ maxEntries: 10, replica: 'annex-0' });
    const e = log.record(decision(), request(), Date.parse('2026-01-02T03:04:05.678Z'));
    expect(e).toEqual({
      metadata: {
        name: expect.stringMatching(/^20260102030405678-[0-9a-f]{6}-1$/),
        namespace: 'shop',
        creationTimestamp: '2026-01-02T03:04:05Z',
      },
      time: '2026-01-02T03:04:05.678Z',
      decision: 'Deny',
      policy: 'pinned-images',
      rule: 'no-latest',
      operation: 'CREATE',
      object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web.front' },
      user: 'jane',
      fields: ['spec.template.spec.containers[0].image'],
      dryRun: false,
      replica: 'annex-0',
    });
    expect(JSON.stringify(log.items())).not.toContain('SECRET-IMAGE');
  });

  it('keeps at most maxEntries, dropping the oldest (watchers see them deleted)', () => {
    const log = new DecisionLog({ maxEntries: 3, replica: 'r' });
    const seen: string[] = [];
    log.store.subscribe('0', (ev) =>
      seen.push(`${ev.type} ${ev.object.metadata.name.split('-').pop()}`),
    );
    for (let i = 0; i < 5; i++) log.record(decision(), request(), 1_700_000_000_000 + i);
    expect(log.items().map((o) => o.metadata.name.split('-').pop())).toEqual(['3', '4', '5']);
    expect(seen).toEqual([
      'ADDED 1',
      'ADDED 2',
      'ADDED 3',
      'ADDED 4',
      'DELETED 1',
      'ADDED 5',
      'DELETED 2',
    ]);
  });

  it('names sort by time; a cluster-scoped request has no namespace', () => {
    const log = new DecisionLog({ maxEntries: 10, replica: 'r' });
    const a = log.record(decision(), request({ namespace: '' }), 2_000);
    const b = log.record(decision(), request(), 1_000);
    expect(a.metadata.namespace).toBeUndefined();
    expect(a.object.namespace).toBeUndefined();
    expect(b.metadata.name < a.metadata.name).toBe(true);
  });

  it('counts decisions by policy and action on /metrics', async () => {
    const log = new DecisionLog({ maxEntries: 10, replica: 'r' });
    const before = await register.getSingleMetricAsString('annex_policy_decisions_total');
    log.record(decision('Audit'), request());
    log.record(decision('Audit'), request());
    const text = await register.getSingleMetricAsString('annex_policy_decisions_total');
    const count = (t: string) =>
      Number(
        /annex_policy_decisions_total\{policy="pinned-images",action="Audit"\} (\d+)/.exec(
          t,
        )?.[1] ?? 0,
      );
    expect(count(text) - count(before)).toBe(2);
  });
});
