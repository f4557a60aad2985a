import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { untypedFields } from '../manifests/structural.js';
import { POLICY_CRD_PATH, policyCrd, policyCrdFile } from './crd.js';
import { policySpecSchema } from './schema.js';

const repo = join(import.meta.dirname, '..', '..');

describe('the AdmissionPolicy CRD', () => {
  it(`${POLICY_CRD_PATH} is the rendering of schema.ts`, () => {
    expect(readFileSync(join(repo, POLICY_CRD_PATH), 'utf8')).toBe(policyCrdFile());
  });

  it('is part of the manifests kustomization', () => {
    const k = parse(readFileSync(join(repo, 'manifests', 'kustomization.yaml'), 'utf8'));
    expect(k.resources).toContain('crds/admissionpolicies.yaml');
  });

  it('is cluster-scoped, v1alpha1 served and stored, with status, short name and columns', () => {
    const crd = policyCrd() as {
      metadata: { name: string };
      spec: {
        scope: string;
        names: { shortNames: string[]; kind: string };
        versions: {
          name: string;
          served: boolean;
          storage: boolean;
          subresources: object;
          additionalPrinterColumns: { name: string }[];
          schema: { openAPIV3Schema: { properties: { spec: unknown } } };
        }[];
      };
    };
    expect(crd.metadata.name).toBe('admissionpolicies.policy.annex.dev');
    expect(crd.spec.scope).toBe('Cluster');
    expect(crd.spec.names).toMatchObject({ kind: 'AdmissionPolicy', shortNames: ['apol'] });
    const [v] = crd.spec.versions;
    expect(v).toMatchObject({
      name: 'v1alpha1',
      served: true,
      storage: true,
      subresources: { status: {} },
    });
    expect(v?.additionalPrinterColumns.map((c) => c.name)).toEqual([
      'Mode',
      'Kinds',
      'Ready',
      'Enforced',
      'Enforced By',
      'Age',
    ]);
    // The same object compile.ts checks policies against.
    expect(v?.schema.openAPIV3Schema.properties.spec).toBe(policySpecSchema);
  });

  it('is structural: every field typed, free-form values kept', () => {
    const crd = policyCrd() as {
      spec: { versions: { schema: { openAPIV3Schema: Record<string, unknown> } }[] };
    };
    expect(untypedFields(crd.spec.versions[0]!.schema.openAPIV3Schema, '')).toEqual([]);
    const rule = (
      policySpecSchema.properties as Record<
        string,
        { items: { properties: Record<string, object> } }
      >
    ).validate!.items.properties;
    expect(rule.schema).toMatchObject({
      type: 'object',
      'x-kubernetes-preserve-unknown-fields': true,
    });
  });
});
