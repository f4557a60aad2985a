// The ExternalMetric schema, kept in this one place: it is the CRD's openAPIV3Schema
// (crd.ts), so the API server refuses a malformed ExternalMetric at `kubectl apply` with a
// one-line message (the CEL rules below), and poller.ts reads the defaults it declares.
import type { JsonSchema } from '../core/types.js';
import { conditionsSchema } from '../core/conditions.js';

const str = (description: string, extra: JsonSchema = {}): JsonSchema => ({
  type: 'string',
  description,
  ...extra,
});
const stringMap = (description: string): JsonSchema => ({
  type: 'object',
  description,
  additionalProperties: { type: 'string' },
});

/** Why a metric is not Available (status.conditions), by the failure's kind. */
export const AVAILABLE_REASONS = [
  'SourceRefused',
  'Unauthorized',
  'FetchFailed',
  'ParseFailed',
  'Stale',
] as const;

export const DEFAULT_INTERVAL_SECONDS = 15;
export const DEFAULT_TIMEOUT_SECONDS = 5;
/** staleAfterSeconds when unset: three polls missed. */
export const DEFAULT_STALE_INTERVALS = 3;

const URL_RULE = {
  rule: "self.startsWith('http://') || self.startsWith('https://')",
  message: 'must be an http:// or https:// URL',
};

const http = (what: string): Record<string, JsonSchema> => ({
  url: str(`The ${what} endpoint (http:// or https://).`, {
    maxLength: 2048,
    'x-kubernetes-validations': [URL_RULE],
  }),
  caBundle: str('PEM of the CA that signs an https endpoint; default the system roots.'),
});

export const metricSpecSchema: JsonSchema = {
  type: 'object',
  description:
    'The metric and where its value comes from: exactly one of json, prometheus, objects.',
  properties: {
    metricName: str('The name HPAs ask for (default metadata.name).', {
      pattern: '^[a-zA-Z0-9_.:-]+$',
      maxLength: 253,
    }),
    metricLabels: stringMap(
      'Labels of the value: external.metrics.k8s.io labelSelector (metricLabelSelector for object metrics) matches them.',
    ),
    describedObject: {
      type: 'object',
      description:
        'Serve the value as a metric of this object (custom.metrics.k8s.io, HPA type Object) instead of an external metric.',
      required: ['apiVersion', 'kind', 'name'],
      properties: {
        apiVersion: str('apps/v1, networking.k8s.io/v1, v1…'),
        kind: str('Deployment, Ingress, Service…'),
        name: str("The object, in the ExternalMetric's namespace."),
        resource: str("Its plural resource (default: the kind's plural, as Kubernetes forms it)."),
      },
    },
    json: {
      type: 'object',
      description: 'GET a JSON document and take the number a JSONPath points to.',
      required: ['url', 'path'],
      properties: {
        ...http('JSON'),
        path: str('JSONPath (jsonpath-plus) to the number, e.g. $.queue.depth.', { minLength: 1 }),
      },
    },
    prometheus: {
      type: 'object',
      description: 'GET a Prometheus text endpoint; the sum of the matching series.',
      required: ['url', 'metric'],
      properties: {
        ...http('Prometheus text'),
        metric: str('The metric name.', { pattern: '^[a-zA-Z_:][a-zA-Z0-9_:]*$' }),
        labels: stringMap('Label matchers (equality); every matching series is summed.'),
      },
    },
    objects: {
      type: 'object',
      description: 'The count of Kubernetes objects matching selectors (e.g. pending Jobs).',
      required: ['apiVersion', 'resource'],
      properties: {
        apiVersion: str('v1, batch/v1…'),
        resource: str('Plural resource: pods, jobs…', { pattern: '^[a-z0-9.-]+$' }),
        namespace: str(
          'Default: the ExternalMetric\'s namespace. Another namespace, or "*" for every namespace, is counted only if the user who wrote this spec may list these objects there (annex records the author at admission and asks the API server).',
          { pattern: '^(\\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$', maxLength: 63 },
        ),
        labelSelector: str('A label selector, as kubectl -l takes it.'),
        fieldSelector: str('A field selector, as kubectl --field-selector takes it.'),
      },
    },
    intervalSeconds: {
      type: 'integer',
      description: 'How often the source is read.',
      minimum: 1,
      maximum: 3600,
      default: DEFAULT_INTERVAL_SECONDS,
    },
    timeoutSeconds: {
      type: 'number',
      description: 'A read taking longer fails (and the metric is unavailable).',
      minimum: 0.1,
      maximum: 60,
      default: DEFAULT_TIMEOUT_SECONDS,
    },
    staleAfterSeconds: {
      type: 'integer',
      description: `A value older than this is never served (default ${DEFAULT_STALE_INTERVALS} × intervalSeconds).`,
      minimum: 1,
    },
  },
  'x-kubernetes-validations': [
    {
      rule: '[has(self.json), has(self.prometheus), has(self.objects)].filter(x, x).size() == 1',
      message: 'exactly one source: json, prometheus or objects',
    },
    {
      rule: '!has(self.staleAfterSeconds) || self.staleAfterSeconds >= self.intervalSeconds',
      message: 'staleAfterSeconds must be at least intervalSeconds',
    },
  ],
};

export const metricStatusSchema: JsonSchema = {
  type: 'object',
  description: 'What annex last read (written by annex).',
  properties: {
    value: str('The last value read, as a Kubernetes quantity.'),
    timestamp: str(
      'When value was read (annex writes status when an outcome changes, not on every read).',
      { format: 'date-time' },
    ),
    available: { type: 'boolean', description: 'Served to HPAs now.' },
    lastError: str('Why the last read failed, if it did (never text the source sent).'),
    lastErrorTime: str('When it failed.', { format: 'date-time' }),
    observedGeneration: { type: 'integer', description: 'The spec generation read.' },
    conditions: conditionsSchema(
      `Available: True when a value is served to HPAs; False with reason ${AVAILABLE_REASONS.join(', ')}.`,
    ),
  },
};

export const metricSchema: JsonSchema = {
  type: 'object',
  description:
    'A number annex reads from an endpoint or the API server and serves to HorizontalPodAutoscalers.',
  required: ['spec'],
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: metricSpecSchema,
    status: metricStatusSchema,
  },
};
