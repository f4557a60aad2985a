// The scaling feature's configuration section, `scaling:` at the top of annex's
// configuration file (a key reserved for it; a user feature's is `featureConfig.<name>`).
// src/config/schema.ts places it in the root schema; docs/configuration.md renders it.
import { declareConfig, filledIn } from '../core/config.js';

/** ExternalMetrics: metrics HorizontalPodAutoscalers scale on. */
export interface ScalingConfig {
  /**
   * Serve external.metrics.k8s.io and custom.metrics.k8s.io from the ExternalMetrics
   * (metrics.annex.dev) annex polls: HPAs scale on them. Needs the CRD and an API server.
   */
  enabled: boolean;
  /**
   * Serve and register external.metrics.k8s.io and custom.metrics.k8s.io (what HPAs read).
   * Off in the kustomize base: KEDA and prometheus-adapter own them in many clusters.
   */
  registerMetricsApis: boolean;
  /** Where json and prometheus sources may be read from (the schema's descriptions say how). */
  allow: { urls: string[]; hosts: string[]; cidrs: string[] };
}

export const scalingConfig = declareConfig<ScalingConfig>({
  type: 'object',
  additionalProperties: false,
  required: ['enabled', 'registerMetricsApis', 'allow'],
  properties: {
    enabled: { type: 'boolean', default: false },
    registerMetricsApis: { type: 'boolean', default: true },
    allow: {
      type: 'object',
      description: [
        "Where an ExternalMetric's json or prometheus source may be read from. Anyone who",
        'may edit a namespace may write an ExternalMetric, and annex fetches its URL from',
        'inside the cluster: so nothing is allowed unless listed here (objects sources need',
        'nothing). A URL is allowed when it is under one of `urls`, its host is one of',
        '`hosts`, or the address it connects to is in one of `cidrs`. Whatever a name or a',
        'broad CIDR allows, annex never connects to loopback, 0.0.0.0/8, link-local',
        '(169.254.0.0/16, fe80::/10), cloud metadata (100.100.100.200, 168.63.129.16,',
        'fd00:ec2::254) or the IPv4-mapped, NAT64 and 6to4 forms of these, unless an entry',
        'names that address: a URL or host entry written with the IP address, or a CIDR',
        'inside the range (127.0.0.1/32). Checked on the address dialled, after DNS;',
        'redirects are never followed.',
      ].join(' '),
      additionalProperties: false,
      required: ['urls', 'hosts', 'cidrs'],
      default: filledIn<ScalingConfig['allow']>(),
      properties: {
        urls: {
          type: 'array',
          description:
            "URL prefixes: same scheme, host and port, and a path under the prefix's (http://prometheus.monitoring.svc:9090/api/v1/ allows /api/v1/query, not /admin).",
          items: { type: 'string', minLength: 1 },
          default: [],
        },
        hosts: {
          type: 'array',
          description:
            'Host names (any port, http and https): queue.shop.svc.cluster.local, or *.monitoring.svc for every name under it; an IP address allows exactly that address.',
          items: { type: 'string', minLength: 1 },
          default: [],
        },
        cidrs: {
          type: 'array',
          description:
            'Address ranges any URL may connect to, whatever its name: 10.96.0.0/12, fd00::/8.',
          items: { type: 'string', minLength: 1 },
          default: [],
        },
      },
    },
  },
});
