// JSON Schemas of NodeMetrics and PodMetrics (k8s.io/metrics v1beta1 and v1 share them).
// ajv checks what the store produces against them in tests; the OpenAPI documents are built
// from them, so the descriptions are what `kubectl explain nodemetrics` prints.
import type { JsonSchema } from '../core/types.js';

/** A canonical Kubernetes quantity ("249957861n", "2786616Ki", "1", "1e3"). */
const QUANTITY_PATTERN =
  '^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$';

const quantity = (description: string): JsonSchema => ({
  type: 'string',
  pattern: QUANTITY_PATTERN,
  description,
});

const usage: JsonSchema = {
  type: 'object',
  description:
    'Resource usage by resource name. cpu is the average number of cores used over the window (a quantity in nanocores, e.g. "249957861n"); memory is the working set at the end of the window (bytes, e.g. "2786616Ki").',
  required: ['cpu', 'memory'],
  properties: {
    cpu: quantity('Average CPU usage over the window, in cores.'),
    memory: quantity('Memory working set at the sample time, in bytes.'),
  },
  additionalProperties: quantity('Usage of another resource (for example swap).'),
};

const metadata = (namespaced: boolean): JsonSchema => ({
  type: 'object',
  description:
    "Standard object's metadata: the name (and namespace) and labels of the measured object, and creationTimestamp = the time the response was built.",
  required: namespaced ? ['name', 'namespace'] : ['name'],
  properties: {
    name: { type: 'string', description: 'Name of the measured object.' },
    ...(namespaced
      ? { namespace: { type: 'string', description: 'Namespace of the measured pod.' } }
      : {}),
    labels: {
      type: 'object',
      description: 'Labels copied from the measured object.',
      additionalProperties: { type: 'string' },
    },
    creationTimestamp: {
      type: 'string',
      description: 'When this object was generated (RFC 3339); not when the object was created.',
    },
    resourceVersion: {
      type: 'string',
      description: 'Opaque value that changes whenever the metrics of this object change.',
    },
  },
});

const typeMeta = {
  apiVersion: {
    type: 'string',
    description:
      'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values.',
  },
  kind: {
    type: 'string',
    description: 'Kind is a string value representing the REST resource this object represents.',
  },
};

const timestamp = (nullable: boolean): JsonSchema => ({
  type: 'string',
  ...(nullable ? { nullable: true } : {}),
  description:
    'End of the interval [timestamp-window, timestamp] the metrics were collected over (RFC 3339, second precision).',
});

const window: JsonSchema = {
  type: 'string',
  description:
    'Length of the collection interval, as a Go duration ("15.013s", "1m0.5s"): the time between the two samples the CPU rate was computed from.',
};

export const nodeMetricsSchema: JsonSchema = {
  type: 'object',
  description:
    'NodeMetrics sets resource usage metrics of a node: CPU averaged between the last two samples of its kubelet, and the latest memory working set.',
  required: ['apiVersion', 'kind', 'metadata', 'timestamp', 'window', 'usage'],
  additionalProperties: false,
  properties: {
    ...typeMeta,
    metadata: metadata(false),
    timestamp: timestamp(false),
    window,
    usage,
  },
};

export const podMetricsSchema: JsonSchema = {
  type: 'object',
  description:
    'PodMetrics sets resource usage metrics of a pod: one entry per container, all collected within the same time window.',
  required: ['apiVersion', 'kind', 'metadata', 'timestamp', 'window', 'containers'],
  additionalProperties: false,
  properties: {
    ...typeMeta,
    metadata: metadata(true),
    // null only when every container's usage had to be skipped (as metrics-server does).
    timestamp: timestamp(true),
    window,
    containers: {
      type: 'array',
      description: 'Metrics for all containers, collected within the same time window.',
      items: {
        type: 'object',
        description: 'ContainerMetrics sets resource usage metrics of a container.',
        required: ['name', 'usage'],
        additionalProperties: false,
        properties: {
          name: {
            type: 'string',
            description: 'Container name corresponding to the one from pod.spec.containers.',
          },
          usage,
        },
      },
    },
  },
};
