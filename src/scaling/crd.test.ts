import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { METRIC_CRD_PATH, metricCrd, metricCrdFile } from './crd.js';
import { metricSpecSchema } from './schema.js';

const repo = join(import.meta.dirname, '..', '..');

/** Fields without a type: a structural schema has none. */
function untyped(schema: Record<string, unknown>, at: string): string[] {
  const out = typeof schema.type === 'string' ? [] : [at];
  for (const [k, v] of Object.entries((schema.properties ?? {}) as Record<string, object>)) {
    out.push(...untyped(v as Record<string, unknown>, `${at}.${k}`));
  }
  if (schema.items) out.push(...untyped(schema.items as Record<string, unknown>, `${at}[]`));
  const extra = schema.additionalProperties;
  if (typeof extra === 'object' && extra)
    out.push(...untyped(extra as Record<string, unknown>, `${at}{}`));
  return out;
}

describe('the ExternalMetric CRD', () => {
  it(`${METRIC_CRD_PATH} is the rendering of schema.ts (npm run manifests)`, () => {
    expect(readFileSync(join(repo, METRIC_CRD_PATH), 'utf8')).toBe(metricCrdFile());
  });

  it('is part of the manifests kustomization', () => {
    const k = parse(readFileSync(join(repo, 'manifests', 'kustomization.yaml'), 'utf8'));
    expect(k.resources).toContain('crds/externalmetrics.yaml');
  });

  it('is namespaced, with status, and built from the one schema', () => {
    const crd = metricCrd() as any;
    expect(crd.metadata.name).toBe('externalmetrics.metrics.annex.dev');
    expect(crd.spec.scope).toBe('Namespaced');
    const [v] = crd.spec.versions;
    expect(v).toMatchObject({
      name: 'v1alpha1',
      served: true,
      storage: true,
      subresources: { status: {} },
    });
    expect(v.schema.openAPIV3Schema.properties.spec).toBe(metricSpecSchema);
    expect(untyped(v.schema.openAPIV3Schema, '')).toEqual([]);
  });
});
