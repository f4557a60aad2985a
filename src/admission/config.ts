// The configuration sections of the built-in admission features, `admission.names` and
// `admission.defaults` in annex's configuration file (keys reserved for them; a user
// feature's is `featureConfig.<name>`). The rest of `admission:` is the server's: the
// review byte budget and client-certificate check hold for every webhook, a user's too.
import { declareConfig, filledIn } from '../core/config.js';

/** Workload and referenced names checked with Kubernetes' own rules and messages. */
export interface NamesConfig {
  /** Validating webhook /validate/names.annex.dev. */
  enabled: boolean;
}

/** Defaults added where absent (requests, managed-by, pod-template defaults). */
export interface DefaultsConfig {
  /** Mutating webhook /mutate/defaults.annex.dev. */
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
}

// Nested under `admission`, so each section is filled in from {} as a nested key is.
export const namesConfig = declareConfig<NamesConfig>({
  type: 'object',
  additionalProperties: false,
  required: ['enabled'],
  default: filledIn<NamesConfig>(),
  properties: { enabled: { type: 'boolean', default: true } },
});

export const defaultsConfig = declareConfig<DefaultsConfig>({
  type: 'object',
  additionalProperties: false,
  required: ['enabled', 'managedBy', 'requests', 'podTemplates'],
  default: filledIn<DefaultsConfig>(),
  properties: {
    enabled: { type: 'boolean', default: true },
    managedBy: { type: 'string', default: 'annex' },
    requests: {
      type: 'object',
      additionalProperties: false,
      required: ['cpu', 'memory'],
      default: filledIn<DefaultsConfig['requests']>(),
      properties: {
        cpu: { type: 'string', default: '100m' },
        memory: { type: 'string', default: '128Mi' },
      },
    },
    podTemplates: { type: 'boolean', default: true },
  },
});
