// The one configuration object: every setting annex has, its default, and its check.
// The server, the CLI and the rendered manifests all read it from here.
import type { JSONSchemaType } from 'ajv';

export interface Config {
  server: {
    /** Address to listen on; 0.0.0.0 inside a Pod, 127.0.0.1 for local runs. */
    host: string;
    port: number;
    /** Above the API server's 90 s idle-connection timeout, so it never reuses a closed socket. */
    keepAliveTimeoutSeconds: number;
  };
  tls: {
    /** Folder holding ca.crt, ca.key, tls.crt, tls.key; generated on first run if absent. */
    dir: string;
    /** The Service name and namespace the API server dials: SAN <service>.<namespace>.svc. */
    service: string;
    namespace: string;
    dnsNames: string[];
    ipAddresses: string[];
    /** Generate missing certificates at start (off when a Secret is mounted). */
    generate: boolean;
  };
  kube: {
    /** Path to a kubeconfig; empty means in-cluster, or no cluster at all. */
    kubeconfig: string;
  };
  admission: {
    names: {
      /** Validating webhook /validate/names. */
      enabled: boolean;
    };
    defaults: {
      /** Mutating webhook /mutate/defaults. */
      enabled: boolean;
      /** app.kubernetes.io/managed-by added where absent; empty turns it off. */
      managedBy: string;
      /** Container resource requests added where absent; empty values turn each off. */
      requests: { cpu: string; memory: string };
      /** The API server's pod-template defaults on custom resources (CRDs get none). */
      podTemplates: boolean;
    };
  };
  log: {
    level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'silent';
  };
}

/** An empty object as a default: ajv then fills its fields from their own defaults. */
const filledIn = <T>() => ({}) as T;
type Admission = Config['admission'];

export const configSchema: JSONSchemaType<Config> = {
  type: 'object',
  additionalProperties: false,
  required: ['server', 'tls', 'kube', 'admission', 'log'],
  properties: {
    server: {
      type: 'object',
      additionalProperties: false,
      required: ['host', 'port', 'keepAliveTimeoutSeconds'],
      properties: {
        host: { type: 'string', minLength: 1, default: '127.0.0.1' },
        // 0 asks the OS for a free port (tests).
        port: { type: 'integer', minimum: 0, maximum: 65535, default: 8443 },
        keepAliveTimeoutSeconds: { type: 'integer', minimum: 91, default: 100 },
      },
    },
    tls: {
      type: 'object',
      additionalProperties: false,
      required: ['dir', 'service', 'namespace', 'dnsNames', 'ipAddresses', 'generate'],
      properties: {
        dir: { type: 'string', minLength: 1, default: 'certs' },
        service: { type: 'string', minLength: 1, default: 'annex' },
        namespace: { type: 'string', minLength: 1, default: 'annex-system' },
        dnsNames: { type: 'array', items: { type: 'string' }, default: ['localhost'] },
        ipAddresses: { type: 'array', items: { type: 'string' }, default: ['127.0.0.1'] },
        generate: { type: 'boolean', default: true },
      },
    },
    kube: {
      type: 'object',
      additionalProperties: false,
      required: ['kubeconfig'],
      properties: { kubeconfig: { type: 'string', default: '' } },
    },
    admission: {
      type: 'object',
      additionalProperties: false,
      required: ['names', 'defaults'],
      properties: {
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
  },
};
