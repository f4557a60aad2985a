// The one configuration object: every setting annex has, its default, and its check.
// The server, the CLI and the rendered manifests all read it from here.
import type { JSONSchemaType } from 'ajv';

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
     * After the delay: how long in-flight requests may take to finish before their
     * connections are destroyed. Delay + timeout must fit in the Pod's
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
    /** Workload and referenced names checked with Kubernetes' own rules and messages. */
    names: {
      /** Validating webhook /validate/names. */
      enabled: boolean;
    };
    /** Defaults added where absent (requests, managed-by, pod-template defaults). */
    defaults: {
      /** Mutating webhook /mutate/defaults. */
      enabled: boolean;
      /** app.kubernetes.io/managed-by added where absent; empty turns it off. */
      managedBy: string;
      /** Container resource requests added where absent; empty values turn each off. */
      requests: {
        /** CPU request, as a quantity (100m). */
        cpu: string;
        /** Memory request, as a quantity (128Mi). */
        memory: string;
      };
      /** The API server's pod-template defaults on custom resources (CRDs get none). */
      podTemplates: boolean;
    };
  };
  /** The aggregated metrics group (NodeMetrics, PodMetrics) and where its data comes from. */
  metrics: {
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
  };
  /** AdmissionPolicies (policy.annex.dev) and the decision log (audit.annex.dev). */
  policy: {
    /** Serve AdmissionPolicies (policy.annex.dev): webhooks, Events, the decision log. */
    enabled: boolean;
    /** Without an API server, the policies are read from this folder. */
    directory: string;
    /** reportingInstance of Events and `replica` of decisions; empty = the host (Pod) name. */
    instance: string;
    /** Write events.k8s.io Events for Deny, Warn and Audit decisions. */
    events: boolean;
    /**
     * Hand every policy that compiles to CEL (and has no Audit action, which the decision log
     * records) to the API server as a ValidatingAdmissionPolicy / MutatingAdmissionPolicy;
     * the rest stay on annex's webhook.
     */
    native: boolean;
    /** The AdmissionEvents (kubectl get admissionevents) each replica keeps. */
    decisionLog: {
      /** AdmissionEvents kept in memory by each replica; the oldest are dropped. */
      maxEntries: number;
      /** Other replicas' base URLs (https://host:port), read when listing decisions. */
      peers: string[];
      /** Find the other replicas from the EndpointSlices of tls.service in tls.namespace. */
      discoverPeers: boolean;
      /** How long one peer may take to answer before its decisions are left out. */
      peerTimeoutMs: number;
    };
  };
  /** ExternalMetrics: metrics HorizontalPodAutoscalers scale on. */
  scaling: {
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
  };
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

/** An empty object as a default: ajv then fills its fields from their own defaults. */
const filledIn = <T>() => ({}) as T;
type Admission = Config['admission'];
type Policy = Config['policy'];

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
        names: {
          type: 'object',
          additionalProperties: false,
          required: ['enabled'],
          default: filledIn<Admission['names']>(),
          properties: { enabled: { type: 'boolean', default: true } },
        },
        defaults: {
          type: 'object',
          additionalProperties: false,
          required: ['enabled', 'managedBy', 'requests', 'podTemplates'],
          default: filledIn<Admission['defaults']>(),
          properties: {
            enabled: { type: 'boolean', default: true },
            managedBy: { type: 'string', default: 'annex' },
            requests: {
              type: 'object',
              additionalProperties: false,
              required: ['cpu', 'memory'],
              default: filledIn<Admission['defaults']['requests']>(),
              properties: {
                cpu: { type: 'string', default: '100m' },
                memory: { type: 'string', default: '128Mi' },
              },
            },
            podTemplates: { type: 'boolean', default: true },
          },
        },
      },
    },
    metrics: {
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
          default: filledIn<Config['metrics']['kubelet']>(),
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
    },
    policy: {
      type: 'object',
      additionalProperties: false,
      required: ['enabled', 'directory', 'instance', 'events', 'native', 'decisionLog'],
      properties: {
        enabled: { type: 'boolean', default: false },
        directory: { type: 'string', minLength: 1, default: 'policies' },
        instance: { type: 'string', maxLength: 128, default: '' },
        events: { type: 'boolean', default: true },
        native: { type: 'boolean', default: true },
        decisionLog: {
          type: 'object',
          additionalProperties: false,
          required: ['maxEntries', 'peers', 'discoverPeers', 'peerTimeoutMs'],
          default: filledIn<Policy['decisionLog']>(),
          properties: {
            maxEntries: { type: 'integer', minimum: 1, default: 1000 },
            peers: { type: 'array', items: { type: 'string', pattern: '^https://' }, default: [] },
            discoverPeers: { type: 'boolean', default: false },
            peerTimeoutMs: { type: 'integer', minimum: 1, default: 2000 },
          },
        },
      },
    },
    scaling: {
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
          default: filledIn<Config['scaling']['allow']>(),
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
    },
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
