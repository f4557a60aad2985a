// Puts annex's CA into the objects the API server reads it from (APIService
// spec.caBundle, each webhook's clientConfig.caBundle, a CRD's conversion webhook
// clientConfig.caBundle), as field manager "annex".
// One implementation for both callers: annex itself in a cluster (tls.inject, through
// its ServiceAccount, RBAC limited to those names) and `annex certs inject` from an
// operator's kubeconfig.
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';

export interface InjectTargets {
  apiServices: string[];
  validatingWebhooks: string[];
  mutatingWebhooks: string[];
  /** CustomResourceDefinitions converted by annex (spec.conversion.strategy Webhook). */
  crds?: string[];
}

export interface InjectOutcome {
  /** Lower-case kind, as kubectl names it: apiservice, mutatingwebhookconfiguration, … */
  kind:
    | 'apiservice'
    | 'mutatingwebhookconfiguration'
    | 'validatingwebhookconfiguration'
    | 'customresourcedefinition';
  name: string;
  /** False when every caBundle already had the value. */
  changed: boolean;
  /** Webhook configurations: how many webhooks carry the bundle. */
  webhooks?: number;
}

const FIELD_MANAGER = 'annex';

/** A target that cannot carry a caBundle as it stands; the message says what to do. */
export class InjectError extends Error {}
const WEBHOOK_PATHS = {
  validatingwebhookconfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  mutatingwebhookconfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
} as const;

export const hasTargets = (t: InjectTargets) =>
  t.apiServices.length +
    t.validatingWebhooks.length +
    t.mutatingWebhooks.length +
    (t.crds?.length ?? 0) >
  0;

export async function injectWithClient(kube: KubeClient, caBundle: string, t: InjectTargets): Promise<InjectOutcome[]> {
  const out: InjectOutcome[] = [];
  for (const name of t.apiServices) out.push(await injectApiService(kube, caBundle, name));
  for (const name of t.mutatingWebhooks) out.push(await injectWebhooks(kube, caBundle, 'mutatingwebhookconfiguration', name));
  for (const name of t.validatingWebhooks) out.push(await injectWebhooks(kube, caBundle, 'validatingwebhookconfiguration', name));
  for (const name of t.crds ?? []) out.push(await injectCrd(kube, caBundle, name));
  return out;
}

async function injectApiService(kube: KubeClient, caBundle: string, name: string): Promise<InjectOutcome> {
  const path = `/apis/apiregistration.k8s.io/v1/apiservices/${name}`;
  const cur = await kube.get<{ spec: { caBundle?: string } }>(path);
  if (cur.spec.caBundle === caBundle) return { kind: 'apiservice', name, changed: false };
  // caBundle and insecureSkipTLSVerify are mutually exclusive in APIService validation.
  await kube.patch(path, { spec: { caBundle, insecureSkipTLSVerify: false } }, 'merge', { fieldManager: FIELD_MANAGER });
  return { kind: 'apiservice', name, changed: true };
}

type Current<T> = T & { metadata: { resourceVersion: string } };

/**
 * JSON Patch ops computed from the live object (none: nothing to do), sent guarded by a
 * resourceVersion test and retried if the object moved meanwhile. True if it patched.
 */
async function guardedPatch<T>(
  kube: KubeClient,
  path: string,
  ops: (cur: Current<T>) => object[],
): Promise<{ changed: boolean; cur: Current<T> }> {
  for (let attempt = 1; ; attempt++) {
    const cur = await kube.get<Current<T>>(path);
    const todo = ops(cur);
    if (todo.length === 0) return { changed: false, cur };
    try {
      await kube.patch(path, [{ op: 'test', path: '/metadata/resourceVersion', value: cur.metadata.resourceVersion }, ...todo], 'json', {
        fieldManager: FIELD_MANAGER,
      });
      return { changed: true, cur };
    } catch (e) {
      const retriable = e instanceof KubeApiError && (e.code === 409 || e.code === 422);
      if (!retriable || attempt >= 3) throw e;
    }
  }
}

/** Each webhook of a configuration, by index. */
async function injectWebhooks(
  kube: KubeClient,
  caBundle: string,
  kind: keyof typeof WEBHOOK_PATHS,
  name: string,
): Promise<InjectOutcome> {
  const { changed, cur } = await guardedPatch<{ webhooks?: { clientConfig: { caBundle?: string } }[] }>(
    kube,
    `${WEBHOOK_PATHS[kind]}/${name}`,
    (cur) =>
      (cur.webhooks ?? []).flatMap((w, i) =>
        w.clientConfig.caBundle === caBundle ? [] : [{ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }],
      ),
  );
  return { kind, name, changed, webhooks: (cur.webhooks ?? []).length };
}

/** A CRD's conversion webhook; a CRD that does not convert through a webhook is a mistake to report. */
async function injectCrd(kube: KubeClient, caBundle: string, name: string): Promise<InjectOutcome> {
  type Crd = { spec: { conversion?: { strategy?: string; webhook?: { clientConfig?: { caBundle?: string } } } } };
  const { changed } = await guardedPatch<Crd>(kube, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`, (cur) => {
    const conversion = cur.spec.conversion;
    if (conversion?.strategy !== 'Webhook' || !conversion.webhook?.clientConfig)
      throw new InjectError(
        `CustomResourceDefinition ${name} has no conversion webhook (spec.conversion.strategy is ${conversion?.strategy ?? 'None'}): apply its CRD from \`annex manifests\` first`,
      );
    if (conversion.webhook.clientConfig.caBundle === caBundle) return [];
    return [{ op: 'add', path: '/spec/conversion/webhook/clientConfig/caBundle', value: caBundle }];
  });
  return { kind: 'customresourcedefinition', name, changed };
}
