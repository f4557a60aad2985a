// annex's registrations at run time: the one writer of its APIServices and webhook
// configurations (rendered from the features' declarations, applied through the work
// queue once each feature is ready), started by the composition root (start.ts).
import type { Config } from '../config/load.js';
import type { connectKube } from '../kube/connect.js';
import type { Logger } from '../log.js';
import type { WorkQueue } from '../kube/workqueue.js';
import { registerWhenReady, type Registrar } from '../manifests/register.js';
import { ownershipGate, sharedGroups, sharedGroupUnits } from '../manifests/ownership.js';
import { declarationsOf, renderObjects, serviceRefOf } from '../manifests/render.js';
import type { Feature } from '../core/feature.js';

/**
 * The one writer of annex's registrations. With registration.apply: each feature's
 * APIServices and webhook configurations, applied once it is ready (and not shutting down),
 * with annex's CA, again whenever their rendering changes (the CA; rules a feature changes
 * at run time). Without it the install owns them, and annex applies only the `rules` of the
 * webhooks whose feature changes them at run time (`registrationsChanged`).
 */
export function startRegistration(
  config: Config,
  kube: ReturnType<typeof connectKube>,
  features: Feature[],
  reactive: ReadonlySet<string>,
  ca: () => string | undefined,
  shuttingDown: () => boolean,
  queue: WorkQueue,
  log: Logger,
): (Registrar & { report: (() => string) | null }) | null {
  if (!kube) return null;
  const service = serviceRefOf(config);
  const full = config.registration.apply;
  const regLog = log.child({ component: 'registration' });
  // Only annex's own APIService writes need the owner check (manifests/ownership.ts).
  const shared = full ? sharedGroups(declarationsOf(features).groups).map((g) => g.group) : [];
  const gate = shared.length
    ? ownershipGate({
        kube,
        groups: shared,
        service,
        replace: config.registration.replaceOwners,
        log: regLog,
      })
    : null;
  const units = features
    .flatMap((f) => {
      const ready = () => !shuttingDown() && (f.ready?.() ?? true) === true;
      const own = () => {
        const d = declarationsOf([f]);
        return gate ? { ...d, groups: d.groups.filter((g) => !g.apiService?.shared) } : d;
      };
      return [
        {
          name: f.name,
          objects: () => {
            const objects = renderObjects(own(), service);
            if (full) return objects;
            return reactive.has(f.name)
              ? objects.filter(isWebhookConfiguration).map(rulesOnly)
              : [];
          },
          ready,
        },
        ...(gate ? sharedGroupUnits(f.name, declarationsOf([f]).groups, service, ready, gate) : []),
      ];
    })
    .filter((u) => !full || u.objects().length > 0);
  if (!units.length) {
    gate?.stop();
    return null;
  }
  const registrar = registerWhenReady({
    kube,
    units,
    caBundle: () => (full ? Buffer.from(ca() ?? '').toString('base64') : ''),
    rulesOnly: !full,
    queue,
    log: regLog,
  });
  return {
    ...registrar,
    report: gate ? () => gate.report() : null,
    stop: () => {
      gate?.stop();
      registrar.stop();
    },
  };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Rendered = Record<string, any>;
const isWebhookConfiguration = (o: Rendered) => Array.isArray(o.webhooks);
/** Only the webhooks' names and rules: what annex owns when the install owns the rest. */
const rulesOnly = (o: Rendered): Rendered => ({
  apiVersion: o.apiVersion,
  kind: o.kind,
  metadata: { name: o.metadata.name },
  webhooks: (o.webhooks as Rendered[]).map((w) => ({ name: w.name, rules: w.rules })),
});
