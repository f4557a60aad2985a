// The CustomResourceDefinition of PolicyException, rendered from schema.ts, and the
// committed file `manifests/crds/policyexceptions.yaml` (a unit test fails when they drift).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { POLICY_GROUP, POLICY_VERSION } from '../types.js';
import { exceptionSchema } from './schema.js';
import { EXCEPTION_KIND, EXCEPTION_PLURAL } from './types.js';

export const EXCEPTION_CRD_NAME = `${EXCEPTION_PLURAL}.${POLICY_GROUP}`;
export const EXCEPTION_CRD_PATH = 'manifests/crds/policyexceptions.yaml';

/** The CRD object: namespaced, v1alpha1 served and stored, status subresource. */
export function exceptionCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: EXCEPTION_CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'annex', 'app.kubernetes.io/component': 'policy' },
    },
    spec: {
      group: POLICY_GROUP,
      scope: 'Namespaced',
      names: {
        plural: EXCEPTION_PLURAL,
        singular: EXCEPTION_KIND.toLowerCase(),
        kind: EXCEPTION_KIND,
        listKind: `${EXCEPTION_KIND}List`,
        shortNames: ['polex'],
        categories: ['annex'],
      },
      versions: [
        {
          name: POLICY_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: exceptionSchema },
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Policies',
              type: 'string',
              description: 'The policies (and rules) the objects are exempted from.',
              jsonPath: '.status.policies',
            },
            {
              name: 'Ready',
              type: 'string',
              description: 'Every policy and rule named exists and allows exceptions.',
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
            },
            {
              name: 'Reason',
              type: 'string',
              description: 'Why the objects are exempted.',
              jsonPath: '.spec.reason',
              priority: 1,
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
        },
      ],
    },
  };
}

export function exceptionCrdFile(): string {
  const header = [
    '# PolicyException (policy.annex.dev/v1alpha1): objects exempted from AdmissionPolicies.',
    '# Rendered from src/policy/exceptions/schema.ts (`annex manifests`): do not edit.',
  ].join('\n');
  return `${header}\n${stringify(exceptionCrd(), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}

export function writeExceptionCrd(dir: string): string {
  const path = join(dir, EXCEPTION_CRD_PATH);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, exceptionCrdFile());
  return path;
}
