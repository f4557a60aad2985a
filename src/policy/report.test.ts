import { describe, expect, it } from 'vitest';
import { ObjectStore } from '../apiserver/object-store.js';
import { buildReport, policyReportGroup, summarize, type ObjectResults } from './report.js';

const web: ObjectResults = {
  object: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
  results: [
    { policy: 'pinned', rule: 'tag', result: 'fail', message: 'image: must be pinned' },
    { policy: 'names', rule: 'dns', result: 'pass', message: '' },
  ],
  timestamp: 1_700_000_000,
};
const api: ObjectResults = {
  object: { apiVersion: 'v1', kind: 'Pod', namespace: 'shop', name: 'api', uid: 'u1' },
  results: [{ policy: 'names', rule: 'dns', result: 'warn', message: 'x' }],
  timestamp: 1_700_000_100,
};

describe('summarize', () => {
  it('counts every result kind, zeros included', () => {
    expect(summarize([{ result: 'pass' }, { result: 'pass' }, { result: 'skip' }])).toEqual({
      pass: 2,
      fail: 0,
      warn: 0,
      error: 0,
      skip: 1,
    });
  });
});

describe('buildReport', () => {
  it('one namespaced PolicyReport: a result per object × rule, with the summary', () => {
    const r = buildReport('shop', [web, api], '2026-12-03T16:00:00Z');
    expect(r.apiVersion).toBe('wgpolicyk8s.io/v1alpha2');
    expect(r.kind).toBe('PolicyReport');
    expect(r.metadata).toEqual({
      name: 'annex-policies',
      namespace: 'shop',
      creationTimestamp: '2026-12-03T16:00:00Z',
      labels: { 'app.kubernetes.io/managed-by': 'annex' },
    });
    expect(r.summary).toEqual({ pass: 1, fail: 1, warn: 1, error: 0, skip: 0 });
    expect(r.results[0]).toEqual({
      source: 'annex',
      policy: 'pinned',
      rule: 'tag',
      result: 'fail',
      message: 'image: must be pinned',
      scored: true,
      timestamp: { seconds: 1_700_000_000, nanos: 0 },
      resources: [web.object],
    });
    expect(r.results[1]).not.toHaveProperty('message'); // a pass says nothing
  });

  it('orders results by object, whatever the input order: equal inputs, equal reports', () => {
    const a = buildReport('shop', [web, api], 't');
    const b = buildReport('shop', [api, web], 't');
    expect(b).toEqual(a);
    expect(a.results.map((r) => r.resources[0]!.name)).toEqual(['web', 'web', 'api']);
  });

  it('the cluster report is a ClusterPolicyReport without a namespace', () => {
    const ns: ObjectResults = {
      object: { apiVersion: 'v1', kind: 'Namespace', name: 'shop' },
      results: [{ policy: 'p', rule: 'r', result: 'pass', message: '' }],
      timestamp: 1,
    };
    const r = buildReport('', [ns], 't');
    expect(r.kind).toBe('ClusterPolicyReport');
    expect(r.metadata.namespace).toBeUndefined();
  });
});

describe('policyReportGroup', () => {
  it("Kyverno's columns (PASS FAIL WARN ERROR SKIP AGE), counts as integers, AGE as an age", () => {
    const store = new ObjectStore();
    const g = policyReportGroup({ namespaced: store, cluster: store }, 'wgpolicyk8s.io', true);
    expect(g.apiService).toMatchObject({ shared: true, groupPriorityMinimum: 1000 });
    const [polr, cpolr] = g.resources;
    expect(polr).toMatchObject({ plural: 'policyreports', namespaced: true });
    expect(cpolr).toMatchObject({ plural: 'clusterpolicyreports', namespaced: false });
    expect(polr!.verbs).toContain('watch');
    expect(polr!.columns.map((c) => [c.name, c.type])).toEqual([
      ['Pass', 'integer'],
      ['Fail', 'integer'],
      ['Warn', 'integer'],
      ['Error', 'integer'],
      ['Skip', 'integer'],
      ['Age', 'date'],
    ]);
  });
});
