// Registration follows readiness (registration.apply): annex applies the APIServices and
// webhook configurations rendered from a feature's declarations only once that feature is
// ready, so the API server is never sent to a replica that cannot answer; and again
// whenever what they render changes (the CA bundle, rules a feature changes at run time).
// Server-side apply as field manager "annex", by this one writer only: every apply carries
// every field annex owns, since an apply that leaves a field out gives it up.
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';
import type { Logger } from '../log.js';

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

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/**
 * The one writer of the objects annex registers. Every `intervalMs` (and at once on
 * `changed`), each ready unit whose rendering with the current `caBundle()` differs from
 * what was last applied is applied, as field manager annex. A failure is logged once per
 * distinct message and retried with per-unit exponential backoff (0.5 s doubling to 30 s),
 * or at once when the unit changes. A unit that turns unready later stays registered (its
 * failure policy covers a gap; unregistering would flap).
 */
export function registerWhenReady(opts: {
  kube: KubeClient;
  units: RegistrationUnit[];
  caBundle: () => string;
  log: Logger;
  intervalMs?: number;
  now?: () => number;
  /** Only the rules of webhooks whose configuration the install owns (no registration.apply). */
  rulesOnly?: boolean;
}): Registrar {
  const now = opts.now ?? Date.now;
  const applied = new Map<string, string>();
  const lastError = new Map<string, string>();
  const retry = new Map<string, { at: number; delay: number; key: string }>();
  let stopped = false;
  let running = false;
  let rerun = false;
  let waiters: (() => void)[] = [];
  const rendered = (u: RegistrationUnit) => {
    const bundle = opts.caBundle();
    const objects = u.objects().map((o) => withCaBundle(o, bundle));
    return { objects, key: JSON.stringify(objects) };
  };
  const done = () => opts.units.every((u) => applied.get(u.name) === rendered(u).key);

  async function apply(u: RegistrationUnit): Promise<void> {
    const { objects, key } = rendered(u);
    if (applied.get(u.name) === key || !u.ready()) return;
    const r = retry.get(u.name);
    if (r && r.key === key && now() < r.at) return;
    try {
      for (const o of objects) {
        await opts.kube.patch(registrationPath(o), o, 'apply', {
          fieldManager: FIELD_MANAGER,
          force: true,
        });
      }
      applied.set(u.name, key);
      retry.delete(u.name);
      lastError.delete(u.name);
      if (objects.length)
        opts.log.info(
          { feature: u.name, objects: objects.map((o) => `${o.kind}/${o.metadata.name}`) },
          'registered (feature ready)',
        );
    } catch (e) {
      const delay = r && r.key === key ? Math.min(r.delay * 2, MAX_RETRY_MS) : FIRST_RETRY_MS;
      retry.set(u.name, { at: now() + delay, delay, key });
      const missing =
        e instanceof KubeApiError && e.code === 403 && /cannot create/.test(e.message);
      const msg = missing
        ? `${(e as Error).message} (annex may only patch its registrations: create them with \`annex install\` or \`kubectl apply -k manifests/\`)`
        : (e as Error).message;
      // Applying only rules, a configuration the install has not created yet is refused
      // (422: the webhook has no clientConfig): expected until the install runs.
      const notInstalled =
        opts.rulesOnly && e instanceof KubeApiError && (e.code === 422 || e.code === 404);
      if (lastError.get(u.name) !== msg && notInstalled)
        opts.log.info(
          { feature: u.name, code: (e as KubeApiError).code },
          'webhook configuration not installed yet; retrying',
        );
      else if (lastError.get(u.name) !== msg)
        opts.log.error({ feature: u.name, error: msg }, 'registration failed; retrying');
      lastError.set(u.name, msg);
    }
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    if (running) {
      rerun = true;
      return;
    }
    running = true;
    try {
      do {
        rerun = false;
        for (const u of opts.units) await apply(u);
      } while (rerun && !stopped);
    } finally {
      running = false;
    }
    if (done()) {
      for (const w of waiters) w();
      waiters = [];
    }
  }

  const timer = setInterval(() => void tick(), opts.intervalMs ?? 500);
  timer.unref();
  void tick();
  return {
    registered: () =>
      opts.units.filter((u) => applied.get(u.name) === rendered(u).key).map((u) => u.name),
    settled: () => (done() ? Promise.resolve() : new Promise((r) => waiters.push(r))),
    changed: (name) => {
      applied.delete(name);
      retry.delete(name);
      void tick();
    },
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
