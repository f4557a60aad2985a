// Registration follows readiness (registration.apply): annex applies the APIServices and
// webhook configurations rendered from a feature's declarations only once that feature is
// ready, so the API server is never sent to a replica that cannot answer; and again
// whenever what they render changes (the CA bundle, rules a feature changes at run time).
// Server-side apply as field manager "annex", by this one writer only: every apply carries
// every field annex owns, since an apply that leaves a field out gives it up.
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';
import type { Logger } from '../log.js';
import { WorkQueue } from '../kube/workqueue.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Obj = Record<string, any>;

export const FIELD_MANAGER = 'annex';

/** Collection paths of the kinds annex registers. */
export const REGISTRATION_PATHS: Record<string, string> = {
  APIService: '/apis/apiregistration.k8s.io/v1/apiservices',
  ValidatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  MutatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
};

export function registrationPath(o: Obj): string {
  const base = REGISTRATION_PATHS[o.kind as string];
  if (!base) throw new TypeError(`not a registration object: ${String(o.kind)}`);
  return `${base}/${o.metadata.name as string}`;
}

/** A copy of a rendered object with `caBundle` (base64 of a PEM bundle) everywhere it goes. */
export function withCaBundle(o: Obj, caBundle: string): Obj {
  const copy = structuredClone(o);
  if (copy.kind === 'APIService') copy.spec.caBundle = caBundle;
  for (const w of (copy.webhooks as Obj[] | undefined) ?? [])
    if (w.clientConfig) w.clientConfig.caBundle = caBundle;
  return copy;
}

/** What one feature registers, rendered anew at each attempt, and whether it can answer yet. */
export interface RegistrationUnit {
  name: string;
  /** Rendered from the feature's declarations as they are now (rules may change at run time). */
  objects(): Obj[];
  ready(): boolean;
}

export interface Registrar {
  /** Feature names whose current objects are applied with the current CA bundle. */
  registered(): string[];
  /** Resolves once every unit is registered as it is now (tests, `install`). */
  settled(): Promise<void>;
  /**
   * A unit's declarations changed, or its objects were seen to drift in the API server:
   * apply it again now, whatever was applied before.
   */
  changed(name: string): void;
  stop(): void;
}

/**
 * The one writer of the objects annex registers, on the work queue (keys
 * `registration/<unit>`). Every `intervalMs` (and at once on `changed`) each ready unit whose
 * rendering with the current `caBundle()` differs from what was last applied is queued —
 * readiness and the CA file change without an event to hang this on, so a cheap comparison
 * polls them; the queue does the writing, as field manager annex. A failure is logged once
 * per distinct message and retried with the queue's per-key backoff (0.5 s doubling to
 * 30 s), or at once when the unit changes. A unit that turns unready later stays registered
 * (its failure policy covers a gap; unregistering would flap).
 */
export function registerWhenReady(opts: {
  kube: KubeClient;
  units: RegistrationUnit[];
  caBundle: () => string;
  log: Logger;
  intervalMs?: number;
  /** The process's work queue; a private one when absent (tests). */
  queue?: WorkQueue;
  /** Only the rules of webhooks whose configuration the install owns (no registration.apply). */
  rulesOnly?: boolean;
}): Registrar {
  const queue = opts.queue ?? new WorkQueue();
  const applied = new Map<string, string>();
  const lastError = new Map<string, string>();
  /** The rendering that failed last: a different one is tried at once, not after the backoff. */
  const failedKey = new Map<string, string>();
  const units = new Map(opts.units.map((u) => [u.name, u]));
  let stopped = false;
  let waiters: (() => void)[] = [];
  const rendered = (u: RegistrationUnit) => {
    const bundle = opts.caBundle();
    const objects = u.objects().map((o) => withCaBundle(o, bundle));
    return { objects, key: JSON.stringify(objects) };
  };
  const done = () => opts.units.every((u) => applied.get(u.name) === rendered(u).key);
  const wake = () => {
    if (!done()) return;
    for (const w of waiters) w();
    waiters = [];
  };

  async function apply(name: string): Promise<void> {
    const u = units.get(name);
    if (!u || stopped) return;
    const { objects, key } = rendered(u);
    if (applied.get(u.name) === key || !u.ready()) return;
    try {
      for (const o of objects) {
        await opts.kube.patch(registrationPath(o), o, 'apply', {
          fieldManager: FIELD_MANAGER,
          force: true,
        });
      }
    } catch (e) {
      failedKey.set(u.name, key);
      throw e;
    }
    applied.set(u.name, key);
    lastError.delete(u.name);
    failedKey.delete(u.name);
    if (objects.length)
      opts.log.info(
        { feature: u.name, objects: objects.map((o) => `${o.kind}/${o.metadata.name}`) },
        'registered (feature ready)',
      );
    wake();
  }

  function failed(name: string, e: Error): void {
    const missing = e instanceof KubeApiError && e.code === 403 && /cannot create/.test(e.message);
    const msg = missing
      ? `${e.message} (annex may only patch its registrations: create them with \`annex install\` or \`kubectl apply -k manifests/\`)`
      : e.message;
    // Applying only rules, a configuration the install has not created yet is refused
    // (422: the webhook has no clientConfig): expected until the install runs.
    const notInstalled =
      opts.rulesOnly && e instanceof KubeApiError && (e.code === 422 || e.code === 404);
    if (lastError.get(name) !== msg && notInstalled)
      opts.log.info(
        { feature: name, code: (e as KubeApiError).code },
        'webhook configuration not installed yet; retrying',
      );
    else if (lastError.get(name) !== msg)
      opts.log.error({ feature: name, error: msg }, 'registration failed; retrying');
    lastError.set(name, msg);
  }

  const q = queue.writer('registration', { handle: apply, onError: failed });
  /** Queues what is ready and not applied as it renders now (a unit backing off waits). */
  function check(): void {
    if (stopped) return;
    for (const u of opts.units) {
      const { key } = rendered(u);
      if (applied.get(u.name) === key || !u.ready()) continue;
      if (failedKey.has(u.name) && failedKey.get(u.name) !== key) q.forget(u.name);
      q.add(u.name);
    }
    wake();
  }

  const timer = setInterval(check, opts.intervalMs ?? 500);
  timer.unref();
  check();
  return {
    registered: () =>
      opts.units.filter((u) => applied.get(u.name) === rendered(u).key).map((u) => u.name),
    settled: () => (done() ? Promise.resolve() : new Promise((r) => waiters.push(r))),
    changed: (name) => {
      applied.delete(name);
      q.forget(name);
      q.add(name);
    },
    stop: () => {
      stopped = true;
      clearInterval(timer);
      if (!opts.queue) void queue.shutDown();
    },
  };
}
