// Shared API groups (metrics.k8s.io, external. and custom.metrics.k8s.io) are often served
// by another project: minikube's metrics-server addon, KEDA, prometheus-adapter. Before
// annex registers such a group it looks at every APIService of the group, all versions:
// if one points at a Service that is not annex's, the group is left alone (one log line, a
// note in /readyz?verbose) unless registration.replaceOwners names it. The check is per
// group, not per APIService: annex's v1 beside metrics-server's v1beta1 would split one API.
import type { GroupVersionDecl } from '../core/types.js';
import type { KubeClient } from '../kube/client.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import { REGISTRATION_PATHS } from './register.js';
import { apiServices, type ServiceRef } from './render.js';

export interface ApiServiceLike {
  metadata: { name: string; labels?: Record<string, string> };
  spec?: { group?: string; service?: { namespace?: string; name?: string } | null };
}

/** Who serves an APIService: `namespace/name` of its Service, or `the API server itself`. */
export const servedBy = (a: ApiServiceLike): string =>
  a.spec?.service?.name
    ? `${a.spec.service.namespace ?? ''}/${a.spec.service.name}`
    : 'the API server itself';

/** annex's own: labelled as annex's, and pointing at annex's Service. */
export function isAnnexApiService(a: ApiServiceLike, service: Omit<ServiceRef, 'port'>): boolean {
  return (
    a.metadata.labels?.['app.kubernetes.io/name'] === 'annex' &&
    a.spec?.service?.namespace === service.namespace &&
    a.spec?.service?.name === service.name
  );
}

/** The APIServices of `group` that are not annex's, by name. */
export function foreignApiServices(
  items: readonly ApiServiceLike[],
  group: string,
  service: Omit<ServiceRef, 'port'>,
): ApiServiceLike[] {
  return items
    .filter((a) => a.spec?.group === group && !isAnnexApiService(a, service))
    .sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
}

/** The one line that says why a group is not registered and how to change that. */
export function refusal(group: string, foreign: readonly ApiServiceLike[]): string {
  const which = foreign.map((a) => `APIService ${a.metadata.name} → ${servedBy(a)}`).join(', ');
  return `${group} not registered: already served by another owner (${which}); remove it, or list ${group} in registration.replaceOwners to replace it`;
}

export interface OwnershipGate {
  /** true once the APIServices are listed and no other owner serves `group` (or replacing it is allowed). */
  allows(group: string): boolean;
  /** For /readyz?verbose: why a group waits, or what annex replaced; '' when all is annex's. */
  report(): string;
  stop(): void;
}

/**
 * Watches every APIService (list + watch, as the reflector does) and answers, per shared
 * group, whether annex may register it. Logs once each time a group's answer changes.
 */
export function ownershipGate(opts: {
  kube: KubeClient;
  groups: readonly string[];
  service: ServiceRef;
  replace: readonly string[];
  log: Logger;
}): OwnershipGate {
  const items = new Map<string, ApiServiceLike>();
  let synced = false;
  let lastError = '';
  const said = new Map<string, string>();
  const replaceAll = opts.replace.includes('*');
  const replacing = (g: string) => replaceAll || opts.replace.includes(g);
  const foreign = (g: string) => foreignApiServices([...items.values()], g, opts.service);

  const review = () => {
    for (const g of opts.groups) {
      const f = foreign(g);
      const line = !f.length ? '' : replacing(g) ? `replacing ${servedBy(f[0]!)}` : refusal(g, f);
      if (said.get(g) === line) continue;
      said.set(g, line);
      if (line && !replacing(g)) opts.log.warn({ group: g }, line);
      else if (line)
        opts.log.warn(
          { group: g, apiServices: f.map((a) => a.metadata.name) },
          `${g}: replacing another owner's APIServices (registration.replaceOwners)`,
        );
    }
  };

  const stop = startWatch<ApiServiceLike>(
    opts.kube,
    REGISTRATION_PATHS.APIService!,
    {},
    (e) => {
      if (e.type === 'RELISTED') {
        items.clear();
        for (const a of e.items) items.set(a.metadata.name, a);
        synced = true;
        lastError = '';
      } else if (e.type === 'DELETED') items.delete(e.object.metadata.name);
      else if (e.type !== 'BOOKMARK') items.set(e.object.metadata.name, e.object);
      if (synced) review();
    },
    (err) => {
      lastError = err.message.split('\n')[0]!;
      opts.log.warn({ error: lastError }, 'listing APIServices (shared groups wait)');
    },
  );

  return {
    allows: (g) => synced && (replacing(g) || foreign(g).length === 0),
    report: () => {
      if (!synced)
        return `shared groups (${opts.groups.join(', ')}) wait for the APIServices to be listed${lastError ? ` (${lastError})` : ''}`;
      return opts.groups
        .map((g) => {
          const f = foreign(g);
          if (!f.length) return '';
          return replacing(g) ? `${g}: replacing ${servedBy(f[0]!)}` : refusal(g, f);
        })
        .filter(Boolean)
        .join('; ');
    },
    stop,
  };
}

/** The shared groups among these declarations. */
export const sharedGroups = (groups: readonly GroupVersionDecl[]) =>
  groups.filter((g) => g.apiService?.shared);

/**
 * A feature's registration split in two: its other objects as they were, and one unit per
 * shared group that applies only while the gate allows the group, so a refused group
 * holds back nothing else and is registered as soon as its other owner goes.
 */
export function sharedGroupUnits(
  feature: string,
  groups: readonly GroupVersionDecl[],
  service: ServiceRef,
  ready: () => boolean,
  gate: OwnershipGate,
) {
  return sharedGroups(groups).map((g) => ({
    name: `${feature}/${g.group}`,
    // Owned explicitly: a replaced owner's `insecureSkipTLSVerify: true` (KEDA's chart sets
    // it) beside annex's caBundle is refused by the API server.
    objects: () =>
      apiServices(g, service).map((o) => {
        const copy = structuredClone(o) as { spec: Record<string, unknown> } & typeof o;
        copy.spec.insecureSkipTLSVerify = false;
        return copy;
      }),
    ready: () => ready() && gate.allows(g.group),
  }));
}
