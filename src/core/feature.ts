// The one contract every capability of annex is built on, the built-in ones included.
// A feature declares what it serves (admission webhooks, CRD conversions, aggregated API
// groups), how it
// starts and stops, and when it is ready; the server mounts, registers and probes it.
import { declaredName, webhookPath, type Webhook } from './webhook.js';
import type { GroupVersionDecl } from './types.js';
import type { Conversion } from './conversion.js';
import type { KubeClient } from '../kube/client.js';
import type { Logger } from '../log.js';
import type { WorkQueue } from '../kube/workqueue.js';
import type { EventInput } from '../kube/events.js';

// The queue's types are the contract's: a feature is handed one in FeatureContext.
export type { WorkQueue, WriterQueue } from '../kube/workqueue.js';
// So are the Events it records.
export type { EventInput, ObjectReference } from '../kube/events.js';
import { UserError } from '../errors.js';

/**
 * Kubernetes Events (events.k8s.io/v1) about the objects a feature acts on, written the way
 * client-go's recorder writes them: a repeat within 6 minutes grows the first Event's
 * `series.count`, a token bucket per regarding object caps the writes, and the writes go
 * through the work queue (retried with backoff). `reportingController` is
 * `annex.dev/<feature name>`, `reportingInstance` this replica. Never throws, never waits;
 * without an API server it records nothing.
 */
export interface FeatureEvents {
  /**
   * Records one occurrence. `namespace` is the regarding object's, or `default` when that
   * object is cluster-scoped (as the API server validates).
   */
  record(namespace: string, event: EventInput): void;
}

/** What a feature may set of its Event recorder (`Feature.events`); each has a default. */
export interface FeatureEventOptions {
  /** reportingInstance (at most 128 characters); default: the host (Pod) name. */
  instance?: string;
  /** Repeats closer together than this extend the series (default 6 min, client-go's). */
  windowMs?: number;
  /** Writes per regarding object at once (default 25, client-go's spam filter burst)… */
  burst?: number;
  /** …then one more per this many ms (default 5 min, client-go's qps 1/300). */
  refillMs?: number;
  /** Series and buckets kept (default 4096); the least recently seen go first. */
  maxEntries?: number;
}

/**
 * A feature's own configuration section, `featureConfig.<feature name>` in annex's
 * configuration file: validated at start with the rest (a bad value stops annex with one
 * line naming the file and the key path), `defaults` under the file's values, and handed to
 * `start` as `ctx.config`, typed `C` (inferred from `defaults`, or `defineFeature<C>(…)`).
 */
export interface FeatureConfig<C> {
  /** A JSON Schema (draft-07, as ajv reads it) of the section; its `default`s fill in too. */
  schema: object;
  /** What the section holds when the file leaves a key (or the whole section) out. */
  defaults: C;
}

export interface FeatureContext<C = unknown> {
  /**
   * The feature's configuration (`Feature.config`): its defaults with the file's
   * `featureConfig.<name>` over them, validated. Undefined when the feature declares none.
   */
  config: C;
  /** The API server annex extends; null when annex runs without one (local demo). */
  kube: KubeClient | null;
  /** A child logger named after the feature. */
  log: Logger;
  /**
   * The process's one work queue: a feature's writes to the API server go through it
   * (retried with backoff, rate-limited with every other write), keyed `<feature>/…`.
   */
  queue: WorkQueue;
  /**
   * Call after what this feature's declarations read has changed at run time (a webhook's
   * `rules` declared as a getter over the feature's state, as the policy webhooks' are):
   * annex's registrar, the one writer of the registrations, applies them again (retried with
   * backoff until it holds). Never patch a registration yourself: a second writer of the same
   * object takes fields from the first.
   */
  registrationsChanged(): void;
  /** Kubernetes Events about the objects the feature acts on; see FeatureEvents. */
  events: FeatureEvents;
}

export interface Feature<C = unknown> {
  /** Short, unique: used in logs and in /readyz's check names. */
  name: string;
  /** Its own configuration section (`featureConfig.<name>`), handed to start as ctx.config. */
  config?: FeatureConfig<C>;
  webhooks?: Webhook[];
  /** CRD conversion webhooks (ConversionReview), served at /convert/<name>. */
  conversions?: Conversion[];
  groups?: GroupVersionDecl[];
  /**
   * JSON the other replicas of annex read (GET /peers/<feature>/<name>), e.g. to merge
   * what each replica holds in memory. Outside the API server's authentication: the server
   * admits only a client certificate issued by annex's own CA (the replicas' shared one).
   */
  peer?: Record<string, () => unknown>;
  /** The feature's Event recorder (`ctx.events`), where its defaults do not fit. */
  events?: FeatureEventOptions;
  /** Called once before the server listens; a throw stops annex with that message. */
  start?(ctx: FeatureContext<C>): void | Promise<void>;
  stop?(): void | Promise<void>;
  /** true when the feature can do its job, else why not (shown by /readyz?verbose). */
  ready?(): true | string;
  /**
   * What is not yet true although the feature is ready (shown beside its check by
   * /readyz?verbose, never failing it: readiness gates registration, so it cannot wait on
   * what registration brings). Undefined when there is nothing to say.
   */
  report?(): string | undefined;
}

/**
 * Identity, for type inference in user modules: `export default defineFeature({...})`;
 * `ctx.config` is typed from `config.defaults` (or `defineFeature<{ threshold: number }>`).
 */
export const defineFeature = <C = unknown, F extends Feature<C> = Feature<C>>(
  feature: F & Feature<C>,
): F => feature;

const configurationKind = (w: Webhook) =>
  w.type === 'mutating' ? 'MutatingWebhookConfiguration' : 'ValidatingWebhookConfiguration';
const described = (w: Webhook, feature: string) =>
  `${w.type} webhook "${declaredName(w)}" (feature "${feature}")`;

/**
 * Refuses, with one line naming both sides, declarations that would collide: at a URL path
 * (a webhook is served at /validate/<its whole name>, so only a name declared twice shares
 * one; a conversion at /convert/<name>), in a registration object (a webhook configuration,
 * a CRD's conversion, an API group) where the second would silently replace the first, or
 * in a feature name.
 */
export function validateFeatures(features: readonly Feature[]): void {
  const webhooks = new Map<string, { w: Webhook; feature: string }>();
  const owners = new Map<string, string>();
  for (const f of features) {
    if (typeof f?.name !== 'string' || f.name === '') {
      throw new UserError('every feature needs a non-empty name');
    }
    for (const w of f.webhooks ?? []) {
      const path = webhookPath(w);
      const configuration = `${configurationKind(w)} ${w.configuration}`;
      const atPath = webhooks.get(path);
      if (atPath) {
        const by =
          atPath.feature === f.name
            ? `twice by feature "${f.name}"`
            : `by features "${atPath.feature}" and "${f.name}"`;
        throw new UserError(
          `${w.type} webhook "${declaredName(w)}" is declared ${by} (served at ${path}, registered as ${configuration}): declare it once`,
        );
      }
      const inConfiguration = webhooks.get(configuration);
      if (inConfiguration) {
        throw new UserError(
          `${described(inConfiguration.w, inConfiguration.feature)} and ${described(w, f.name)} would both be registered as ${configuration}, the second replacing the first: give one another configuration`,
        );
      }
      webhooks.set(path, { w, feature: f.name });
      webhooks.set(configuration, { w, feature: f.name });
    }
    const claim = (key: string, what: string) => {
      const other = owners.get(key);
      if (other) throw new UserError(`features "${other}" and "${f.name}" both serve ${what}`);
      owners.set(key, f.name);
    };
    for (const c of f.conversions ?? []) {
      claim(`convert/${c.name}`, `conversion path /convert/${c.name}`);
      claim(`crd/${c.crdName}`, `the conversion of CRD ${c.crdName}`);
    }
    for (const g of f.groups ?? []) claim(`group/${g.group}`, `group ${g.group}`);
  }
  // Last: a module's bare webhook is a feature named after it, so a webhook declared twice
  // is reported as such above, not as two features of one name.
  const names = new Set<string>();
  for (const { name } of features) {
    if (names.has(name)) throw new UserError(`two features are named "${name}"`);
    names.add(name);
  }
}
