// Security: RBAC without wildcards. Every Role and ClusterRole annex ships or renders (the
// kustomize base in manifests/, webhooks/, apiservice/, and `annex manifests --all`) names
// its verbs, resources, API groups and non-resource URLs one by one, and no binding hands
// annex a built-in role that holds wildcards (cluster-admin, admin, edit). One exception,
// pinned below: reading the metrics APIs. There a resource is a metric's name, known only
// when an ExternalMetric is created, so the HPA controller's own role (and these) grant
// `resources: ['*']` within those two groups, read-only.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { ALL_BUILTINS } from '../cli/manifests.js';
import { loadConfig } from '../config/load.js';
import { builtinFeatures } from '../server/builtins.js';
import { declarationsOf, renderObjects, serviceRefOf } from './render.js';

const repo = join(import.meta.dirname, '..', '..');
const RULE_LISTS = ['verbs', 'resources', 'apiGroups', 'nonResourceURLs', 'resourceNames'];
const WILDCARD_ROLES = new Set(['cluster-admin', 'admin', 'edit']);
const METRICS_GROUPS = new Set(['external.metrics.k8s.io', 'custom.metrics.k8s.io']);
const READ = new Set(['get', 'list', 'watch']);

/** A read of any metric of the metrics APIs (and nothing else): the exception above. */
const readsAnyMetric = (r: any) =>
  r.resources?.length === 1 &&
  r.resources[0] === '*' &&
  r.apiGroups?.every((g: string) => METRICS_GROUPS.has(g)) &&
  r.verbs?.every((v: string) => READ.has(v)) &&
  !r.resourceNames &&
  !r.nonResourceURLs;

/** Where an object grants more than it names: `<source> <kind>/<name> rules[i].<list>: "*"`. */
function wildcards(source: string, o: any): string[] {
  const at = `${source} ${o?.kind}/${o?.metadata?.name}`;
  if (o?.kind === 'Role' || o?.kind === 'ClusterRole') {
    const found = (o.rules ?? []).flatMap((r: any, i: number) =>
      readsAnyMetric(r)
        ? []
        : RULE_LISTS.flatMap((k) =>
            (r[k] ?? [])
              .filter((v: unknown) => typeof v !== 'string' || v.includes('*'))
              .map((v: unknown) => `${at} rules[${i}].${k}: ${JSON.stringify(v)}`),
          ),
    );
    // An aggregated ClusterRole is whatever others label for it: not named one by one.
    return o.aggregationRule ? [...found, `${at} aggregationRule`] : found;
  }
  if (
    (o?.kind === 'RoleBinding' || o?.kind === 'ClusterRoleBinding') &&
    WILDCARD_ROLES.has(o.roleRef?.name)
  )
    return [`${at} roleRef: ${o.roleRef.name}`];
  return [];
}

function shipped(): [string, any][] {
  const out: [string, any][] = [];
  for (const top of ['manifests', 'webhooks', 'apiservice']) {
    const files = (readdirSync(join(repo, top), { recursive: true }) as string[]).filter((f) =>
      /\.ya?ml$/.test(f),
    );
    for (const f of files) {
      const path = join(repo, top, f);
      for (const doc of parseAllDocuments(readFileSync(path, 'utf8')))
        out.push([relative(repo, path), doc.toJS()]);
    }
  }
  const config = loadConfig({ overrides: ALL_BUILTINS });
  for (const o of renderObjects(declarationsOf(builtinFeatures(config)), serviceRefOf(config)))
    out.push(['annex manifests --all', o]);
  return out;
}

describe('RBAC', () => {
  it('names every verb, resource, group and URL: no wildcard anywhere', () => {
    const objects = shipped();
    const roles = objects.filter(([, o]) => /^(Cluster)?Role(Binding)?$/.test(o?.kind ?? ''));
    // The search met the real RBAC: roles with rules, and bindings.
    expect(roles.filter(([, o]) => o.rules?.length).length).toBeGreaterThanOrEqual(5);
    expect(roles.filter(([, o]) => o.roleRef).length).toBeGreaterThanOrEqual(5);
    expect(objects.some(([source]) => source === 'annex manifests --all')).toBe(true);
    expect(objects.flatMap(([source, o]) => wildcards(source, o))).toEqual([]);
    // The exception stays where it is: two roles, one rule each.
    const metricReaders = roles.flatMap(([source, o]) =>
      (o.rules ?? []).filter(readsAnyMetric).map(() => `${source} ${o.metadata.name}`),
    );
    expect(metricReaders).toEqual([
      'manifests/rbac.yaml annex:hpa-metrics-reader',
      'manifests/rbac.yaml annex:externalmetrics-reader',
    ]);
  });

  it('finds a wildcard where there is one', () => {
    const role = {
      kind: 'ClusterRole',
      metadata: { name: 'x' },
      rules: [{ apiGroups: [''], resources: ['pods/*'], verbs: ['*'] }],
    };
    expect(wildcards('f', role)).toEqual([
      'f ClusterRole/x rules[0].verbs: "*"',
      'f ClusterRole/x rules[0].resources: "pods/*"',
    ]);
    expect(
      wildcards('f', { kind: 'RoleBinding', metadata: { name: 'b' }, roleRef: { name: 'edit' } }),
    ).toEqual(['f RoleBinding/b roleRef: edit']);
    // The metrics exception is read-only and confined to the metrics groups.
    const metrics = { apiGroups: ['external.metrics.k8s.io'], resources: ['*'], verbs: ['get'] };
    expect(wildcards('f', { ...role, rules: [metrics] })).toEqual([]);
    expect(wildcards('f', { ...role, rules: [{ ...metrics, verbs: ['create'] }] })).toEqual([
      'f ClusterRole/x rules[0].resources: "*"',
    ]);
    expect(wildcards('f', { ...role, rules: [{ ...metrics, apiGroups: [''] }] })).toHaveLength(1);
  });
});
