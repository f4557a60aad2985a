import { describe, expect, it } from 'vitest';
import {
  aggregatedDiscovery,
  apiGroup,
  apiGroupList,
  apiResourceList,
  render,
  servedVerbs,
  validateGroups,
} from './discovery.js';
import type { GroupVersionDecl, Provider, ResourceDecl } from '../core/types.js';

const still: Provider = { snapshot: () => ({ resourceVersion: '1', items: [] }) };
const live: Provider = { ...still, subscribe: () => () => {} };

const res = (over: Partial<ResourceDecl>): ResourceDecl => ({
  kind: 'NodeMetrics',
  plural: 'nodes',
  singular: 'nodemetrics',
  namespaced: false,
  verbs: ['get', 'list', 'watch'],
  schema: {},
  columns: [],
  provider: live,
  ...over,
});

const group: GroupVersionDecl = {
  group: 'metrics.annex.dev',
  versions: ['v1', 'v1beta1'],
  resources: [
    res({ shortNames: ['nm'], categories: ['metrics'] }),
    res({
      kind: 'PodMetrics',
      plural: 'pods',
      singular: 'podmetrics',
      namespaced: true,
      provider: still,
    }),
  ],
};

describe('discovery documents', () => {
  it('APIResourceList lists every resource with its served verbs', () => {
    expect(apiResourceList(group, 'v1beta1')).toEqual({
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: 'metrics.annex.dev/v1beta1',
      resources: [
        {
          name: 'nodes',
          singularName: 'nodemetrics',
          namespaced: false,
          kind: 'NodeMetrics',
          verbs: ['get', 'list', 'watch'],
          shortNames: ['nm'],
          categories: ['metrics'],
        },
        // No subscribe: watch is not advertised.
        {
          name: 'pods',
          singularName: 'podmetrics',
          namespaced: true,
          kind: 'PodMetrics',
          verbs: ['get', 'list'],
        },
      ],
    });
  });

  it('APIGroup and APIGroupList prefer the first version', () => {
    const preferred = { groupVersion: 'metrics.annex.dev/v1', version: 'v1' };
    expect(apiGroup(group)).toMatchObject({
      kind: 'APIGroup',
      apiVersion: 'v1',
      name: 'metrics.annex.dev',
      preferredVersion: preferred,
    });
    const list = apiGroupList([group]);
    expect(list.kind).toBe('APIGroupList');
    expect(list.groups[0]).toEqual({
      name: 'metrics.annex.dev',
      versions: [preferred, { groupVersion: 'metrics.annex.dev/v1beta1', version: 'v1beta1' }],
      preferredVersion: preferred,
    });
  });

  it('aggregated discovery has responseKind, scope and freshness for each version', () => {
    const d = aggregatedDiscovery([group], 'v2');
    expect(d.apiVersion).toBe('apidiscovery.k8s.io/v2');
    expect(d.items[0]!.metadata).toEqual({ name: 'metrics.annex.dev', creationTimestamp: null });
    expect(d.items[0]!.versions.map((v) => v.version)).toEqual(['v1', 'v1beta1']);
    const pods = d.items[0]!.versions[1]!.resources[1]!;
    expect(pods).toEqual({
      resource: 'pods',
      responseKind: { group: 'metrics.annex.dev', version: 'v1beta1', kind: 'PodMetrics' },
      scope: 'Namespaced',
      singularResource: 'podmetrics',
      verbs: ['get', 'list'],
    });
    expect(d.items[0]!.versions[0]!.freshness).toBe('Current');
    expect(aggregatedDiscovery([group], 'v2beta1').apiVersion).toBe('apidiscovery.k8s.io/v2beta1');
  });

  it('refuses declarations that would publish an empty or ambiguous discovery', () => {
    expect(() => validateGroups([{ ...group, resources: [] }])).toThrow(/no resources/);
    expect(() => validateGroups([group, group])).toThrow(/twice/);
    expect(() => validateGroups([{ ...group, resources: [res({}), res({})] }])).toThrow(
      /nodes.metrics.annex.dev is declared twice/,
    );
    expect(() =>
      validateGroups([{ ...group, resources: [res({ verbs: ['watch'], provider: still })] }]),
    ).toThrow(/serves no verb/);
    expect(() => validateGroups([group])).not.toThrow();
    expect(servedVerbs(res({ provider: still }))).toEqual(['get', 'list']);
  });

  it('renders with a strong ETag that changes with the content', () => {
    const a = render({ a: 1 });
    expect(a.etag).toMatch(/^"[0-9A-F]{128}"$/);
    expect(render({ a: 1 }).etag).toBe(a.etag);
    expect(render({ a: 2 }).etag).not.toBe(a.etag);
  });
});
