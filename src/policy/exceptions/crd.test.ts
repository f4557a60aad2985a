import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { untypedFields } from '../../manifests/structural.js';
import { EXCEPTION_CRD_PATH, exceptionCrd, exceptionCrdFile } from './crd.js';

const repo = join(import.meta.dirname, '..', '..', '..');

describe('the PolicyException CRD', () => {
  it(`${EXCEPTION_CRD_PATH} is the rendering of schema.ts`, () => {
    expect(readFileSync(join(repo, EXCEPTION_CRD_PATH), 'utf8')).toBe(exceptionCrdFile());
  });

  it('is part of the manifests kustomization', () => {
    const k = parse(readFileSync(join(repo, 'manifests', 'kustomization.yaml'), 'utf8'));
    expect(k.resources).toContain('crds/policyexceptions.yaml');
  });

  it('is namespaced, with status, a reason required and the columns kubectl prints', () => {
    const crd = exceptionCrd() as any;
    expect(crd.spec.scope).toBe('Namespaced');
    const v = crd.spec.versions[0];
    expect(v.subresources).toEqual({ status: {} });
    expect(v.schema.openAPIV3Schema.properties.spec.required).toEqual([
      'reason',
      'exceptions',
      'match',
    ]);
    expect(v.additionalPrinterColumns.map((c: { name: string }) => c.name)).toEqual([
      'Policies',
      'Ready',
      'Reason',
      'Age',
    ]);
  });

  it('is structural: every field typed', () => {
    expect(untypedFields((exceptionCrd() as any).spec.versions[0].schema.openAPIV3Schema)).toEqual(
      [],
    );
  });
});
