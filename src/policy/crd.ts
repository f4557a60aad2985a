// The CustomResourceDefinition of AdmissionPolicy, rendered from schema.ts (the one
// source of the shape), and the committed file `manifests/crds/admissionpolicies.yaml`
// (`policyCrdFile()`; a unit test fails when the two drift).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { policySchema } from './schema.js';
import { POLICY_GROUP, POLICY_KIND, POLICY_PLURAL, POLICY_VERSION } from './types.js';

export const POLICY_CRD_NAME = `${POLICY_PLURAL}.${POLICY_GROUP}`;

/** Repo-relative path of the committed rendering. */
export const POLICY_CRD_PATH = 'manifests/crds/admissionpolicies.yaml';

/** The CRD object: cluster-scoped, v1alpha1 served and stored, status subresource. */
export function policyCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: POLICY_CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'annex', 'app.kubernetes.io/component': 'policy' },
    },
    spec: {
      group: POLICY_GROUP,
      scope: 'Cluster',
      names: {
        plural: POLICY_PLURAL,
        singular: POLICY_KIND.toLowerCase(),
        kind: POLICY_KIND,
        listKind: `${POLICY_KIND}List`,
        shortNames: ['apol'],
        categories: ['annex'],
      },
      versions: [
        {
          name: POLICY_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: policySchema },
          subresources: { status: {} },
          additionalPrinterColumns: [
            {
              name: 'Mode',
              type: 'string',
              description: 'What a failing rule does (spec.actions); Mutate for mutate rules.',
              jsonPath: '.status.actions',
            },
            {
              name: 'Kinds',
              type: 'string',
              description: 'The kinds the policy matches.',
              jsonPath: '.status.kinds',
            },
            {
              name: 'Ready',
              type: 'string',
              description: 'The policy compiled.',
              jsonPath: '.status.conditions[?(@.type=="Ready")].status',
            },
            {
              name: 'Enforced',
              type: 'string',
              description: 'annex observed the object that enforces it in the API server.',
              jsonPath: '.status.conditions[?(@.type=="Enforced")].status',
            },
            {
              name: 'Enforced By',
              type: 'string',
              description: "The API server (ValidatingAdmissionPolicy) or annex's webhook.",
              jsonPath: '.status.enforcedBy',
            },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
        },
      ],
    },
  };
}

/** The text of manifests/crds/admissionpolicies.yaml. */
export function policyCrdFile(): string {
  const header = [
    '# AdmissionPolicy (policy.annex.dev/v1alpha1): policies annex enforces on admission.',
    '# Rendered from src/policy/schema.ts (`annex manifests`): do not edit.',
  ].join('\n');
  return `${header}\n${stringify(policyCrd(), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}

/** Writes the rendering under `dir` (a checkout's root); returns the file written. */
export function writePolicyCrd(dir: string): string {
  const path = join(dir, POLICY_CRD_PATH);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, policyCrdFile());
  return path;
}
