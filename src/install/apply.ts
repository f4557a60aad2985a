// `annex install` and `annex uninstall` against an API server, as the operator.
// Install: server-side apply of the bundle (field manager annex-install), then wait until
// annex itself has registered its APIServices and webhooks (it does so only once ready)
// and the APIServices are Available. Uninstall: the registrations FIRST — once they are
// gone nothing in the cluster calls annex — then everything else labelled
// app.kubernetes.io/name=annex, namespace last.
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';
import { isAnnexApiService, refusal, type ApiServiceLike } from '../manifests/ownership.js';
import { REGISTRATION_PATHS } from '../manifests/register.js';
import { POLICY_LABEL } from '../policy/cel/compile.js';
import { NAME_LABEL, type Obj } from './bundle.js';

export const INSTALL_MANAGER = 'annex-install';

interface Kind {
  /** Collection path; `{ns}` for namespaced kinds. */
  path: string;
}

const ADMISSION = '/apis/admissionregistration.k8s.io/v1';

const KINDS: Record<string, Kind> = {
  Namespace: { path: '/api/v1/namespaces' },
  CustomResourceDefinition: { path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' },
  ClusterRole: { path: '/apis/rbac.authorization.k8s.io/v1/clusterroles' },
  ClusterRoleBinding: { path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings' },
  Role: { path: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles' },
  RoleBinding: { path: '/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings' },
  ServiceAccount: { path: '/api/v1/namespaces/{ns}/serviceaccounts' },
  ConfigMap: { path: '/api/v1/namespaces/{ns}/configmaps' },
  Secret: { path: '/api/v1/namespaces/{ns}/secrets' },
  Service: { path: '/api/v1/namespaces/{ns}/services' },
  Deployment: { path: '/apis/apps/v1/namespaces/{ns}/deployments' },
  PodDisruptionBudget: { path: '/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets' },
  Lease: { path: '/apis/coordination.k8s.io/v1/namespaces/{ns}/leases' },
  Pod: { path: '/api/v1/namespaces/{ns}/pods' },
  ReplicaSet: { path: '/apis/apps/v1/namespaces/{ns}/replicasets' },
  APIService: { path: REGISTRATION_PATHS.APIService! },
  ValidatingWebhookConfiguration: { path: REGISTRATION_PATHS.ValidatingWebhookConfiguration! },
  MutatingWebhookConfiguration: { path: REGISTRATION_PATHS.MutatingWebhookConfiguration! },
  ValidatingAdmissionPolicyBinding: { path: `${ADMISSION}/validatingadmissionpolicybindings` },
  ValidatingAdmissionPolicy: { path: `${ADMISSION}/validatingadmissionpolicies` },
  MutatingAdmissionPolicyBinding: { path: `${ADMISSION}/mutatingadmissionpolicybindings` },
  MutatingAdmissionPolicy: { path: `${ADMISSION}/mutatingadmissionpolicies` },
};

/**
 * What the policy feature hands the API server (policy.native), labelled with their policy:
 * not in the bundle, so swept by that label, bindings before policies.
 */
const POLICY_KINDS = [
  'ValidatingAdmissionPolicyBinding',
  'ValidatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
];

const REGISTRATION_KINDS = [
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'APIService',
];
/** What annex or its controllers create at run time, beside the bundle (swept by label). */
const NAMESPACED_KINDS = [
  'Deployment',
  'ReplicaSet',
  'Pod',
  'PodDisruptionBudget',
  'Service',
  'ConfigMap',
  'Secret',
  'Lease',
  'ServiceAccount',
  'RoleBinding',
  'Role',
];
const CLUSTER_KINDS = ['ClusterRoleBinding', 'ClusterRole', 'CustomResourceDefinition'];

function collection(kind: string, ns?: string): string {
  const k = KINDS[kind];
  if (!k) throw new Error(`annex install does not know the kind ${kind}`);
  return k.path.replace('{ns}', ns ?? '');
}

export const objectPath = (o: Obj) =>
  `${collection(o.kind, o.metadata.namespace)}/${o.metadata.name}`;

export type Say = (line: string) => void;

/**
 * Server-side apply of every object, except the registration placeholders: created when
 * missing, never touched after, as annex owns them once it has registered itself (an
 * upgrade must not reset their service port or anything else annex applied).
 */
export async function applyBundle(kube: KubeClient, objs: Obj[], say: Say): Promise<void> {
  for (const o of objs) {
    if (o.kind in REGISTRATION_PATHS) {
      try {
        await kube.create(collection(o.kind), o);
        say(
          `created ${o.kind.toLowerCase()}/${o.metadata.name} (placeholder: annex registers itself)`,
        );
      } catch (e) {
        if (!(e instanceof KubeApiError && e.code === 409)) throw e;
        say(await kept(kube, o, serviceOf(objs)));
      }
      continue;
    }
    await kube.patch(objectPath(o), o, 'apply', { fieldManager: INSTALL_MANAGER, force: true });
    say(`applied ${o.kind.toLowerCase()}/${o.metadata.name}`);
  }
}

/** The Service annex's registrations name, as the bundle declares it. */
function serviceOf(bundle: Obj[]): { namespace: string; name: string } {
  const s = bundle.find((o) => o.kind === 'Service');
  return { namespace: s?.metadata.namespace ?? '', name: s?.metadata.name ?? '' };
}

/** An existing registration kept as it is: annex's own, or (APIService) another owner's. */
async function kept(kube: KubeClient, o: Obj, service: { namespace: string; name: string }) {
  const what = `${o.kind.toLowerCase()}/${o.metadata.name}`;
  if (o.kind !== 'APIService') return `kept ${what} (annex's own)`;
  const live = await kube.get<ApiServiceLike>(objectPath(o));
  return isAnnexApiService(live, service)
    ? `kept ${what} (annex's own)`
    : `kept ${what}: ${refusal(o.spec.group as string, [live])}`;
}

interface ApiServiceStatus extends ApiServiceLike {
  status?: { conditions?: { type: string; status: string; message?: string }[] };
}

/**
 * Until annex has registered every kind it renders (at least one webhook configuration or
 * APIService) and every registered APIService is Available; false on timeout.
 */
export async function waitForRegistration(
  kube: KubeClient,
  timeoutMs: number,
  say: Say,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    const [apis, hooks] = await Promise.all([
      kube.list<ApiServiceStatus>(REGISTRATION_PATHS.APIService!, {
        labelSelector: NAME_LABEL,
      }),
      Promise.all(
        ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'].map(async (kind) =>
          // List items carry no kind: put it back for the messages.
          (
            await kube.list<Obj>(REGISTRATION_PATHS[kind]!, { labelSelector: NAME_LABEL })
          ).items.map((o): Obj => ({ ...o, kind })),
        ),
      ),
    ]);
    const configs = hooks.flat();
    // Placeholders (no webhooks, or no caBundle) until a ready replica applies the real ones.
    const pending = [
      ...configs
        .filter(
          (w) =>
            !(w.webhooks ?? []).length ||
            (w.webhooks as Obj[]).some((h) => !h.clientConfig?.caBundle),
        )
        .map((w) => `${w.kind.toLowerCase()}/${w.metadata.name}`),
      ...apis.items
        .filter(
          (a) => !a.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True'),
        )
        .map((a) => `apiservice/${a.metadata.name}`),
    ];
    const state =
      apis.items.length + configs.length === 0
        ? 'no annex registrations found (is manifests/registrations.yaml applied?)'
        : pending.length > 0
          ? `waiting for annex to become ready and register ${pending.join(', ')}`
          : '';
    const webhooks = configs;
    if (!state) {
      say(
        `registered by annex: ${[...webhooks.map((w) => `${w.kind.toLowerCase()}/${w.metadata.name}`), ...apis.items.map((a) => `apiservice/${a.metadata.name}`)].join(', ')}`,
      );
      return true;
    }
    if (state !== last) say(state);
    last = state;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function deleteIfThere(kube: KubeClient, path: string): Promise<boolean> {
  try {
    await kube.delete(path, { propagationPolicy: 'Background' });
    return true;
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404) return false;
    throw e;
  }
}

/**
 * What uninstall may delete: everything labelled as annex's, except an APIService that
 * points at another Service (a shared group's owner, e.g. KEDA, that an older `kubectl
 * apply -k` labelled): annex never deletes what it does not serve.
 */
async function ours(
  kube: KubeClient,
  kind: string,
  ns: string | undefined,
  service: { namespace: string; name: string },
  labelSelector = NAME_LABEL,
): Promise<Obj[]> {
  const list = await kube.list<Obj>(collection(kind, ns), { labelSelector });
  return kind === 'APIService'
    ? list.items.filter((o) => isAnnexApiService(o as ApiServiceLike, service))
    : list.items;
}

async function sweep(
  kube: KubeClient,
  kind: string,
  ns: string | undefined,
  say: Say,
  service: { namespace: string; name: string },
  labelSelector = NAME_LABEL,
): Promise<void> {
  let items: Obj[];
  try {
    items = await ours(kube, kind, ns, service, labelSelector);
  } catch (e) {
    // A kind this API server does not serve (MutatingAdmissionPolicy off): nothing of it to delete.
    if (e instanceof KubeApiError && e.code === 404) return;
    throw e;
  }
  for (const o of items) {
    const path = `${collection(kind, o.metadata.namespace)}/${o.metadata.name}`;
    if (await deleteIfThere(kube, path)) say(`deleted ${kind.toLowerCase()}/${o.metadata.name}`);
  }
}

/**
 * Registrations first (and waits until they are gone), then the namespaced objects of the
 * bundle's namespaces, then the cluster-scoped ones, then the namespaces. Returns the
 * namespaces still terminating when `waitMs` ran out (their finalizers are the namespace
 * controller's).
 */
export async function uninstall(
  kube: KubeClient,
  bundle: Obj[],
  say: Say,
  waitMs = 30_000,
): Promise<string[]> {
  const service = serviceOf(bundle);
  for (const kind of REGISTRATION_KINDS) await sweep(kube, kind, undefined, say, service);
  for (const kind of REGISTRATION_KINDS)
    await until(async () => (await ours(kube, kind, undefined, service)).length === 0, waitMs);
  for (const kind of POLICY_KINDS) await sweep(kube, kind, undefined, say, service, POLICY_LABEL);
  const namespaces = [
    ...new Set(bundle.map((o) => o.metadata.namespace as string | undefined).filter((n) => n)),
  ] as string[];
  for (const ns of namespaces) {
    if (!(await exists(kube, `/api/v1/namespaces/${ns}`))) continue;
    for (const kind of NAMESPACED_KINDS) await sweep(kube, kind, ns, say, service);
  }
  for (const kind of CLUSTER_KINDS) await sweep(kube, kind, undefined, say, service);
  const own = bundle.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name as string);
  for (const ns of own)
    if (await deleteIfThere(kube, `/api/v1/namespaces/${ns}`)) say(`deleted namespace/${ns}`);
  const left: string[] = [];
  for (const ns of own) {
    const gone = await until(async () => !(await exists(kube, `/api/v1/namespaces/${ns}`)), waitMs);
    if (!gone) left.push(ns);
  }
  return left;
}

async function exists(kube: KubeClient, path: string): Promise<boolean> {
  try {
    await kube.get(path);
    return true;
  } catch (e) {
    if (e instanceof KubeApiError && e.code === 404) return false;
    throw e;
  }
}

async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}
