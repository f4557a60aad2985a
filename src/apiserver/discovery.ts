// Discovery documents built from the declarations: the legacy APIGroupList / APIGroup /
// APIResourceList (apiVersion v1, unversioned meta types) and aggregated discovery
// (apidiscovery.k8s.io v2 and v2beta1, same shape) that the aggregator fetches from /apis.
import { createHash } from 'node:crypto';
import type { GroupVersionDecl, ResourceDecl, Verb } from '../core/types.js';

/** Verbs really served: watch only when the provider can stream changes. */
export function servedVerbs(r: ResourceDecl): Verb[] {
  return r.verbs.filter((v) => v !== 'watch' || typeof r.provider.subscribe === 'function');
}

/** Rejects declarations that would publish broken discovery (empty resources, duplicates). */
export function validateGroups(groups: readonly GroupVersionDecl[]): void {
  const seen = new Set<string>();
  for (const g of groups) {
    if (!g.group) throw new Error('an aggregated group needs a name');
    if (seen.has(g.group)) throw new Error(`group ${g.group} is declared twice`);
    seen.add(g.group);
    if (g.versions.length === 0) throw new Error(`group ${g.group} has no versions`);
    // client-go 0.26 logs "Got empty response" on every call for a GV without resources.
    if (g.resources.length === 0) throw new Error(`group ${g.group} has no resources`);
    const plurals = new Set<string>();
    for (const r of g.resources) {
      if (plurals.has(r.plural))
        throw new Error(`resource ${r.plural}.${g.group} is declared twice`);
      plurals.add(r.plural);
      if (servedVerbs(r).length === 0)
        throw new Error(`resource ${r.plural}.${g.group} serves no verb`);
    }
  }
}

const groupVersion = (group: string, version: string) => ({
  groupVersion: `${group}/${version}`,
  version,
});

export function apiGroup(g: GroupVersionDecl) {
  return { kind: 'APIGroup', apiVersion: 'v1', ...apiGroupList([g]).groups[0]! };
}

export function apiGroupList(groups: readonly GroupVersionDecl[]) {
  return {
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: groups.map((g) => ({
      name: g.group,
      versions: g.versions.map((v) => groupVersion(g.group, v)),
      preferredVersion: groupVersion(g.group, g.versions[0]!),
    })),
  };
}

export function apiResourceList(g: GroupVersionDecl, version: string) {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: `${g.group}/${version}`,
    resources: g.resources.map((r) => ({
      name: r.plural,
      singularName: r.singular,
      namespaced: r.namespaced,
      kind: r.kind,
      verbs: servedVerbs(r),
      ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
      ...(r.categories?.length ? { categories: r.categories } : {}),
    })),
  };
}

/** APIGroupDiscoveryList for apidiscovery.k8s.io/<version> (v2 or v2beta1). */
export function aggregatedDiscovery(groups: readonly GroupVersionDecl[], version: string) {
  return {
    kind: 'APIGroupDiscoveryList',
    apiVersion: `apidiscovery.k8s.io/${version}`,
    metadata: {},
    items: groups.map((g) => ({
      metadata: { name: g.group, creationTimestamp: null },
      versions: g.versions.map((v) => ({
        version: v,
        resources: g.resources.map((r) => ({
          resource: r.plural,
          // Always set: a nil responseKind crashed client-go 0.26.0–0.26.3.
          responseKind: { group: g.group, version: v, kind: r.kind },
          scope: r.namespaced ? 'Namespaced' : 'Cluster',
          singularResource: r.singular,
          verbs: servedVerbs(r),
          ...(r.shortNames?.length ? { shortNames: r.shortNames } : {}),
          ...(r.categories?.length ? { categories: r.categories } : {}),
        })),
        freshness: 'Current',
      })),
    })),
  };
}

/** A document serialized once, with the ETag its bytes hash to. */
export interface Rendered {
  body: string;
  etag: string;
  hash: string;
}

export function render(doc: unknown): Rendered {
  const body = JSON.stringify(doc);
  const hash = createHash('sha512').update(body).digest('hex').toUpperCase();
  return { body, hash, etag: `"${hash}"` };
}
