// The CustomResourceDefinition of ExternalMetric, rendered from schema.ts (the one source
// of the shape), and the committed file `manifests/crds/externalmetrics.yaml`
// (`npm run manifests` writes it; a unit test fails when the two drift).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { metricSchema } from './schema.js';
import { METRIC_GROUP, METRIC_KIND, METRIC_PLURAL, METRIC_VERSION } from './types.js';

export const METRIC_CRD_NAME = `${METRIC_PLURAL}.${METRIC_GROUP}`;

/** Repo-relative path of the committed rendering. */
export const METRIC_CRD_PATH = 'manifests/crds/externalmetrics.yaml';

const column = (name: string, type: string, jsonPath: string, description: string) => ({
  name,
  type,
  description,
  jsonPath,
});

/** A field of the Available condition, as a printer column reads it. */
const AVAILABLE = (field: string) => `.status.conditions[?(@.type=="Available")].${field}`;

/** The CRD object: namespaced, v1alpha1 served and stored, status subresource. */
export function metricCrd(): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: METRIC_CRD_NAME,
      labels: { 'app.kubernetes.io/name': 'annex', 'app.kubernetes.io/component': 'scaling' },
    },
    spec: {
      group: METRIC_GROUP,
      scope: 'Namespaced',
      names: {
        plural: METRIC_PLURAL,
        singular: METRIC_KIND.toLowerCase(),
        kind: METRIC_KIND,
        listKind: `${METRIC_KIND}List`,
        shortNames: ['em'],
        categories: ['annex'],
      },
      versions: [
        {
          name: METRIC_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: metricSchema },
          subresources: { status: {} },
          additionalPrinterColumns: [
            column('Value', 'string', '.status.value', 'The last value read.'),
            column(
              'Available',
              'string',
              AVAILABLE('status'),
              'Served to HPAs now: True or False.',
            ),
            column('Reason', 'string', AVAILABLE('reason'), 'Why it is (not) available.'),
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            {
              ...column('Message', 'string', AVAILABLE('message'), 'Why, in words.'),
              priority: 1,
            },
          ],
        },
      ],
    },
  };
}

/** The text of manifests/crds/externalmetrics.yaml. */
export function metricCrdFile(): string {
  const header = [
    '# ExternalMetric (metrics.annex.dev/v1alpha1): numbers annex serves to HPAs.',
    '# Rendered from src/scaling/schema.ts (`npm run manifests`): do not edit.',
  ].join('\n');
  return `${header}\n${stringify(metricCrd(), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}

/** Writes the rendering under `dir` (a checkout's root); returns the file written. */
export function writeMetricCrd(dir: string): string {
  const path = join(dir, METRIC_CRD_PATH);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, metricCrdFile());
  return path;
}
