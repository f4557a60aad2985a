import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { POLICY_CRD_PATH, policyCrd, policyCrdFile } from './crd.js';
import { policySpecSchema } from './schema.js';

const repo = join(import.meta.dirname, '..', '..');

/** Every place a structural schema breaks: an untyped field outside preserve-unknown-fields. */
function untyped(schema: Record<string, unknown>, at: string): string[] {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true && !schema.properties) {
    return typeof schema.type === 'string' ? [] : [at];
  }
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
    expect(untyped(crd.spec.versions[0]!.schema.openAPIV3Schema, '')).toEqual([]);
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
