import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { untypedFields } from '../manifests/structural.js';
import { METRIC_CRD_PATH, metricCrd, metricCrdFile } from './crd.js';
import { metricSpecSchema } from './schema.js';

const repo = join(import.meta.dirname, '..', '..');

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
    expect(untypedFields(v.schema.openAPIV3Schema, '')).toEqual([]);
  });
});
