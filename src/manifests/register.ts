// Registration follows readiness (registration.apply): annex applies the APIServices and
// webhook configurations rendered from a feature's declarations only once that feature is
// ready, so the API server is never sent to a replica that cannot answer; and again
// whenever the CA bundle changes. Server-side apply as field manager "annex": the first
// apply creates the object, later ones own exactly the fields annex renders.
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
  for (const w of (copy.webhooks as Obj[] | undefined) ?? []) w.clientConfig.caBundle = caBundle;
  return copy;
}

/** What one feature registers, and whether it can answer yet. */
export interface RegistrationUnit {
  name: string;
  objects: Obj[];
  ready(): boolean;
}

export interface Registrar {
  /** Feature names whose objects are applied with the current CA bundle. */
  registered(): string[];
  /** Resolves once every unit is registered with the current bundle (tests, `install`). */
  settled(): Promise<void>;
  stop(): void;
}

/**
 * Every `intervalMs`: each ready unit whose objects were not yet applied with the current
 * `caBundle()` is applied. Failures are logged (once per distinct message) and retried on
 * the next tick; a unit that turns unready later stays registered (its failure policy
 * covers a gap; unregistering would flap).
 */
export function registerWhenReady(opts: {
  kube: KubeClient;
  units: RegistrationUnit[];
  caBundle: () => string;
  log: Logger;
  intervalMs?: number;
}): Registrar {
  const applied = new Map<string, string>();
  const lastError = new Map<string, string>();
  let stopped = false;
  let running = false;
  let waiters: (() => void)[] = [];
  const done = () => opts.units.every((u) => applied.get(u.name) === opts.caBundle());

  async function tick(): Promise<void> {
    if (running || stopped) return;
    running = true;
    try {
      for (const u of opts.units) {
        const bundle = opts.caBundle();
        if (applied.get(u.name) === bundle || !u.ready()) continue;
        try {
          for (const o of u.objects) {
            await opts.kube.patch(registrationPath(o), withCaBundle(o, bundle), 'apply', {
              fieldManager: FIELD_MANAGER,
              force: true,
            });
          }
          applied.set(u.name, bundle);
          lastError.delete(u.name);
          opts.log.info(
            { feature: u.name, objects: u.objects.map((o) => `${o.kind}/${o.metadata.name}`) },
            'registered (feature ready)',
          );
        } catch (e) {
          const missing =
            e instanceof KubeApiError && e.code === 403 && /cannot create/.test(e.message);
          const msg = missing
            ? `${(e as Error).message} (annex may only patch its registrations: create them with \`annex install\` or \`kubectl apply -k manifests/\`)`
            : (e as Error).message;
          if (lastError.get(u.name) !== msg)
            opts.log.error({ feature: u.name, error: msg }, 'registration failed; retrying');
          lastError.set(u.name, msg);
        }
      }
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
      opts.units.filter((u) => applied.get(u.name) === opts.caBundle()).map((u) => u.name),
    settled: () => (done() ? Promise.resolve() : new Promise((r) => waiters.push(r))),
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
