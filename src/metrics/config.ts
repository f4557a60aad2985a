// The metrics feature's configuration section, `metrics:` at the top of annex's
// configuration file (a key reserved for it; a user feature's is `featureConfig.<name>`).
// src/config/schema.ts places it in the root schema; docs/configuration.md renders it.
import { declareConfig, filledIn } from '../core/config.js';

/** The aggregated metrics group (NodeMetrics, PodMetrics) and where its data comes from. */
export interface MetricsConfig {
  /** Serve the aggregated metrics-like group (discovery, OpenAPI, list/get/watch). */
  enabled: boolean;
  /** The API group it is served as. */
  group: string;
  /** Also serve the same data as metrics.k8s.io v1beta1 + v1, for `kubectl top`. */
  registerMetricsK8sIo: boolean;
  /** local: this machine as a node, annex as a pod; kubelet: scrape every Node. */
  source: 'local' | 'kubelet';
  /** How often the source is read; CPU is the rate between two reads. */
  scrapeIntervalSeconds: number;
  /** Namespace of the pod the local source reports for annex itself. */
  localNamespace: string;
  /** How the kubelet source reaches each Node's kubelet (/metrics/resource). */
  kubelet: {
    /** Only for clusters whose kubelets serve self-signed certificates (minikube). */
    insecureSkipTLSVerify: boolean;
    /** CA for kubelet serving certificates; empty = the cluster CA when in a Pod. */
    caFile: string;
    /** Client certificate for the kubelet; empty = none. */
    clientCertFile: string;
    /** Its key. */
    clientKeyFile: string;
    /** Bearer token for the kubelet (nodes/metrics); empty = none. */
    tokenFile: string;
    /** Budget for one kubelet's answer. */
    timeoutSeconds: number;
    /** Which of a Node's addresses to dial, the first type found first. */
    preferredAddressTypes: string[];
    /** Kubelets read at once. */
    concurrency: number;
  };
}

export const metricsConfig = declareConfig<MetricsConfig>({
  type: 'object',
  additionalProperties: false,
  required: [
    'enabled',
    'group',
    'registerMetricsK8sIo',
    'source',
    'scrapeIntervalSeconds',
    'localNamespace',
    'kubelet',
  ],
  properties: {
    enabled: { type: 'boolean', default: true },
    group: { type: 'string', minLength: 1, default: 'metrics.annex.dev' },
    registerMetricsK8sIo: { type: 'boolean', default: false },
    source: { type: 'string', enum: ['local', 'kubelet'], default: 'local' },
    // metrics-server's minimum: two samples must be far enough apart to make a rate.
    scrapeIntervalSeconds: { type: 'integer', minimum: 1, default: 15 },
    localNamespace: { type: 'string', minLength: 1, default: 'annex-system' },
    kubelet: {
      type: 'object',
      additionalProperties: false,
      required: [
        'insecureSkipTLSVerify',
        'caFile',
        'clientCertFile',
        'clientKeyFile',
        'tokenFile',
        'timeoutSeconds',
        'preferredAddressTypes',
        'concurrency',
      ],
      default: filledIn<MetricsConfig['kubelet']>(),
      properties: {
        insecureSkipTLSVerify: { type: 'boolean', default: false },
        caFile: { type: 'string', default: '' },
        clientCertFile: { type: 'string', default: '' },
        clientKeyFile: { type: 'string', default: '' },
        tokenFile: { type: 'string', default: '' },
        timeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
        preferredAddressTypes: {
          type: 'array',
          items: {
            type: 'string',
            enum: ['InternalIP', 'ExternalIP', 'Hostname', 'InternalDNS', 'ExternalDNS'],
          },
          default: ['InternalIP', 'ExternalIP', 'Hostname'],
        },
        concurrency: { type: 'integer', minimum: 1, default: 32 },
      },
    },
  },
});
