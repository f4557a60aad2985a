// The one configuration object: every setting annex has, its default, and its check.
// The server, the CLI and the rendered manifests all read it from here. This file owns the
// server's own settings; each built-in feature declares its section beside its code, as a
// user's feature does (Feature.config), and is placed here at a top-level key reserved for
// it (a user feature's section is `featureConfig.<name>`), so the file format, the one
// validation pass and docs/configuration.md cover every key.
import type { JSONSchemaType } from 'ajv';
import {
  defaultsConfig,
  namesConfig,
  type DefaultsConfig,
  type NamesConfig,
} from '../admission/config.js';
import { filledIn } from '../core/config.js';
import { metricsConfig, type MetricsConfig } from '../metrics/config.js';
import { policyConfig, type PolicyConfig } from '../policy/config.js';
import { scalingConfig, type ScalingConfig } from '../scaling/config.js';

export interface Config {
  /** The HTTPS listener: address, port, connection and request limits, graceful shutdown. */
  server: {
    /** Address to listen on; 0.0.0.0 inside a Pod, 127.0.0.1 for local runs. */
    host: string;
    /** HTTPS port (HTTP/2 and HTTP/1.1 on one port); 0 asks the OS for a free one. */
    port: number;
    /**
     * Idle HTTP/1.1 keep-alive connections and idle HTTP/2 sessions (no open stream) are
     * closed after this. Above the API server's 90 s idle-connection timeout, so it never
     * reuses a closed socket. An open watch is not idle.
     */
    keepAliveTimeoutSeconds: number;
    /**
     * Request headers and body must arrive within this, and a new connection must send its
     * first request within it. The API server waits at most 30 s for a webhook.
     */
    requestTimeoutSeconds: number;
    /** A TLS handshake must complete within this. */
    handshakeTimeoutSeconds: number;
    /**
     * Open connections at most (keep it well below the file-descriptor limit). At the cap
     * the connection idle the longest is closed for a newcomer; if none is idle, the
     * newcomer is answered 503 with Retry-After and Connection: close (HTTP/2: GOAWAY).
     */
    maxConnections: number;
    /**
     * Requests in flight at once, per priority class (src/server/overload.ts); beyond a
     * class's bound its requests get 429 with Retry-After at once. Separate budgets keep
     * a runaway client from starving the API server's own calls. Within a class each
     * authenticated caller may hold ceil(bound / callers) slots; probes are never counted.
     */
    maxInFlight: {
      /** Admission- and ConversionReviews from the API server. */
      review: number;
      /** Discovery (/api, /apis[/<group>[/<version>]]) and /openapi (the aggregator's probe). */
      discovery: number;
      /** Watches, counted until they close, never against `requests`. */
      watch: number;
      /** Everything else: get, list, /metrics. */
      requests: number;
    };
    /**
     * On SIGTERM, /readyz answers 503 at once and annex keeps serving this long, so that
     * endpoints and the API server stop sending before it stops listening
     * (kube-apiserver's --shutdown-delay-duration). Unset: 10 s (DEFAULT_SHUTDOWN_DELAY_SECONDS)
     * with an API server, 0 without one (a laptop's `npm start`: nothing routes by readiness).
     */
    shutdownDelaySeconds?: number;
    /**
     * After the delay: how long in-flight requests may take to finish, and idle keep-alive
     * connections may wait for their next request (answered with Connection: close),
     * before their connections are destroyed. Delay + timeout must fit in the Pod's
     * terminationGracePeriodSeconds (30 s by default).
     */
    shutdownTimeoutSeconds: number;
  };
  /** annex's CA and serving certificate, and the objects whose caBundle it keeps current. */
  tls: {
    /** Folder holding ca.crt, ca.key, tls.crt, tls.key; generated on first run if absent. */
    dir: string;
    /** The Service name and namespace the API server dials: SAN <service>.<namespace>.svc. */
    service: string;
    /** The namespace of that Service (SAN <service>.<namespace>.svc). */
    namespace: string;
    /** More DNS names the serving certificate holds. */
    dnsNames: string[];
    /** IP addresses the serving certificate holds. */
    ipAddresses: string[];
    /** Generate missing certificates at start (off when a Secret is mounted). */
    generate: boolean;
    /**
     * One CA for every replica: the Secret (in tls.namespace) holding the CA and serving
     * certificate, copied into tls.dir and watched; a Lease of the same name lets one
     * replica at a time create, renew or rotate it. Empty: each annex uses tls.dir alone.
     */
    secret: string;
    /** How often each replica re-reads the Secret. */
    syncIntervalSeconds: number;
    /** Rotation: time between publishing the new CA, switching the leaf, dropping the old CA. */
    overlapSeconds: number;
    /**
     * Objects whose caBundle annex keeps equal to its CA, at start and on every
     * certificate change (in a cluster; needs patch RBAC on exactly these names). A target
     * missing or refused is logged and retried with backoff; annex serves meanwhile.
     */
    inject: {
      /** APIService names (spec.caBundle). */
      apiServices: string[];
      /** ValidatingWebhookConfiguration names (every webhook's clientConfig.caBundle). */
      validatingWebhooks: string[];
      /** MutatingWebhookConfiguration names (every webhook's clientConfig.caBundle). */
      mutatingWebhooks: string[];
      /** CRDs whose conversion webhook annex serves (needs get/patch on each, by name). */
      crds: string[];
    };
  };
  /** How annex registers its APIServices and webhook configurations with the API server. */
  registration: {
    /** The port the registrations name (the Service's port); 0: server.port. */
    servicePort: number;
    /**
     * annex applies its own APIServices and webhook configurations (server-side apply,
     * field manager annex, caBundle filled), each only once the feature serving it is
     * ready, and again when the certificate changes. In a cluster; RBAC: patch on exactly
     * those names (apply creates with patch alone).
     */
    apply: boolean;
    /**
     * API groups other projects serve too (metrics.k8s.io: metrics-server; external. and
     * custom.metrics.k8s.io: KEDA, prometheus-adapter) whose APIServices annex replaces even
     * when another Service serves one of their versions. Without it annex leaves such a group
     * alone and says so in its log and /readyz?verbose.
     */
    replaceOwners: string[];
  };
  /** The API server annex talks to (authentication, authorization, watches, writes). */
  kube: {
    /** Path to a kubeconfig; empty means $KUBECONFIG, else in-cluster, else no cluster at all. */
    kubeconfig: string;
    /** Kubeconfig context to use; empty means its current-context. */
    context: string;
    /** Budget for connecting to the API server and for each answer (and an exec plugin run). */
    timeoutSeconds: number;
  };
  /** The built-in admission webhooks and what every AdmissionReview may cost. */
  admission: {
    /** AdmissionReview bytes held at once (read, decided, answer unsent); beyond it 429. */
    maxInFlightBytes: number;
    /**
     * PEM file of the CA of the client certificate the kube-apiserver presents to annex's
     * webhooks (its AdmissionConfiguration kubeconfig). A review with one is authenticated;
     * any other is answered, but handlers are told and the policy feature records nothing
     * of it. Read again when it changes; absent or empty = no caller is authenticated.
     */
    clientCA: string;
    /** Refuse (401) AdmissionReviews without a client certificate from clientCA, which must exist. */
    requireClientCert: boolean;
    names: NamesConfig;
    defaults: DefaultsConfig;
  };
  metrics: MetricsConfig;
  policy: PolicyConfig;
  scaling: ScalingConfig;
  /** annex's JSON log lines (identifiers only, never object contents). */
  log: {
    /** The lowest level written. */
    level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
  };
  /** Modules of the user's own features (paths, relative to the working directory). */
  features: string[];
  /**
   * The user's features' own settings, a mapping under each feature's name, validated at
   * start against the JSON Schema the feature declares (`config: { schema, defaults }`) and
   * handed to it as `ctx.config`, its defaults filled in. A name no loaded feature declares
   * a config for is refused.
   */
  featureConfig: Record<string, Record<string, unknown>>;
}

/** server.shutdownDelaySeconds when unset and annex has an API server (see Config). */
export const DEFAULT_SHUTDOWN_DELAY_SECONDS = 10;

export const configSchema: JSONSchemaType<Config> = {
  type: 'object',
  additionalProperties: false,
  required: [
    'server',
    'tls',
    'registration',
    'kube',
    'admission',
    'metrics',
    'policy',
    'scaling',
    'log',
    'features',
    'featureConfig',
  ],
  properties: {
    server: {
      type: 'object',
      additionalProperties: false,
      required: [
        'host',
        'port',
        'keepAliveTimeoutSeconds',
        'requestTimeoutSeconds',
        'handshakeTimeoutSeconds',
        'maxConnections',
        'maxInFlight',
        'shutdownTimeoutSeconds',
      ],
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        // 0 asks the OS for a free port (tests).
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 8443 },
        keepAliveTimeoutSeconds: { type: 'integer', minimum: 91, default: 100 },
        requestTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 30 },
        handshakeTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
        maxConnections: { type: 'integer', minimum: 1, default: 8192 },
        // kube-apiserver's --max-requests-inflight is 400 too.
        maxInFlight: {
          type: 'object',
          additionalProperties: false,
          required: ['review', 'discovery', 'watch', 'requests'],
          default: filledIn<Config['server']['maxInFlight']>(),
          properties: {
            review: { type: 'integer', minimum: 1, default: 400 },
            discovery: { type: 'integer', minimum: 1, default: 100 },
            watch: { type: 'integer', minimum: 1, default: 1000 },
            requests: { type: 'integer', minimum: 1, default: 400 },
          },
        },
        shutdownDelaySeconds: { type: 'number', minimum: 0, nullable: true },
        shutdownTimeoutSeconds: { type: 'number', minimum: 0, default: 15 },
      },
    },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: [
        'dir',
        'service',
        'namespace',
        'dnsNames',
        'ipAddresses',
        'generate',
        'secret',
        'syncIntervalSeconds',
        'overlapSeconds',
        'inject',
      ],
      properties: {
        dir: { type: 'string', minLength: 1, default: 'certs' },
        service: { type: 'string', minLength: 1, default: 'annex' },
        namespace: { type: 'string', minLength: 1, default: 'annex-system' },
        dnsNames: { type: 'array', items: { type: 'string' }, default: ['localhost'] },
        ipAddresses: { type: 'array', items: { type: 'string' }, default: ['127.0.0.1'] },
        generate: { type: 'boolean', default: true },
        secret: { type: 'string', default: '' },
        syncIntervalSeconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
        overlapSeconds: { type: 'number', minimum: 0, default: 60 },
        inject: {
          type: 'object',
          additionalProperties: false,
          required: ['apiServices', 'validatingWebhooks', 'mutatingWebhooks', 'crds'],
          default: filledIn<Config['tls']['inject']>(),
          properties: {
            apiServices: { type: 'array', items: { type: 'string' }, default: [] },
            validatingWebhooks: { type: 'array', items: { type: 'string' }, default: [] },
            mutatingWebhooks: { type: 'array', items: { type: 'string' }, default: [] },
            crds: { type: 'array', items: { type: 'string' }, default: [] },
          },
        },
      },
    },
    registration: {
      type: 'object',
      additionalProperties: false,
      required: ['apply', 'servicePort', 'replaceOwners'],
      properties: {
        apply: { type: 'boolean', default: false },
        replaceOwners: {
          type: 'array',
          items: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$' },
          default: [],
        },
        servicePort: { type: 'integer', minimum: 0, maximum: 65535, default: 0 },
      },
    },
    kube: {
      type: 'object',
      additionalProperties: false,
      required: ['kubeconfig', 'context', 'timeoutSeconds'],
      properties: {
        kubeconfig: { type: 'string', default: '' },
        context: { type: 'string', default: '' },
        timeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
      },
    },
    admission: {
      type: 'object',
      additionalProperties: false,
      required: ['maxInFlightBytes', 'clientCA', 'requireClientCert', 'names', 'defaults'],
      properties: {
        // 64 MiB: nine reviews of the API server's largest (3 MiB object + 3 MiB oldObject).
        maxInFlightBytes: { type: 'integer', minimum: 1, default: 64 * 1024 * 1024 },
        clientCA: { type: 'string', default: '' },
        requireClientCert: { type: 'boolean', default: false },
        names: namesConfig.schema,
        defaults: defaultsConfig.schema,
      },
    },
    metrics: metricsConfig.schema,
    policy: policyConfig.schema,
    scaling: scalingConfig.schema,
    log: {
      type: 'object',
      additionalProperties: false,
      required: ['level'],
      properties: {
        level: {
          type: 'string',
          enum: ['trace', 'debug', 'info', 'warn', 'error', 'silent'],
          default: 'info',
        },
      },
    },
    features: { type: 'array', items: { type: 'string', minLength: 1 }, default: [] },
    featureConfig: {
      type: 'object',
      required: [],
      additionalProperties: { type: 'object', required: [] },
      default: {},
    },
  },
};
