// Puts annex's CA into the objects the API server reads it from (APIService
// spec.caBundle, each webhook's clientConfig.caBundle), as field manager "annex".
// One implementation for both callers: annex itself in a cluster (tls.inject, through
// its ServiceAccount, RBAC limited to those names) and `annex certs inject` from an
// operator's kubeconfig.
import type { KubeClient } from '../kube/client.js';
import { KubeApiError } from '../kube/errors.js';

export interface InjectTargets {
  apiServices: string[];
  validatingWebhooks: string[];
  mutatingWebhooks: string[];
}

export interface InjectOutcome {
  /** Lower-case kind, as kubectl names it: apiservice, mutatingwebhookconfiguration, … */
  kind: 'apiservice' | 'mutatingwebhookconfiguration' | 'validatingwebhookconfiguration';
  name: string;
  /** False when every caBundle already had the value. */
  changed: boolean;
  /** Webhook configurations: how many webhooks carry the bundle. */
  webhooks?: number;
}

const FIELD_MANAGER = 'annex';
const WEBHOOK_PATHS = {
  validatingwebhookconfiguration: '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  mutatingwebhookconfiguration: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
} as const;

export const hasTargets = (t: InjectTargets) =>
  t.apiServices.length + t.validatingWebhooks.length + t.mutatingWebhooks.length > 0;

export async function injectWithClient(kube: KubeClient, caBundle: string, t: InjectTargets): Promise<InjectOutcome[]> {
  const out: InjectOutcome[] = [];
  for (const name of t.apiServices) out.push(await injectApiService(kube, caBundle, name));
  for (const name of t.mutatingWebhooks) out.push(await injectWebhooks(kube, caBundle, 'mutatingwebhookconfiguration', name));
  for (const name of t.validatingWebhooks) out.push(await injectWebhooks(kube, caBundle, 'validatingwebhookconfiguration', name));
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

/** JSON Patch per webhook index, guarded by a resourceVersion test; retried if the object moved. */
async function injectWebhooks(
  kube: KubeClient,
  caBundle: string,
  kind: keyof typeof WEBHOOK_PATHS,
  name: string,
): Promise<InjectOutcome> {
  const path = `${WEBHOOK_PATHS[kind]}/${name}`;
  for (let attempt = 1; ; attempt++) {
    const cur = await kube.get<{
      metadata: { resourceVersion: string };
      webhooks?: { clientConfig: { caBundle?: string } }[];
    }>(path);
    const ops = (cur.webhooks ?? []).flatMap((w, i) =>
      w.clientConfig.caBundle === caBundle
        ? []
        : [{ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: caBundle }],
    );
    const webhooks = (cur.webhooks ?? []).length;
    if (ops.length === 0) return { kind, name, changed: false, webhooks };
    try {
      await kube.patch(path, [{ op: 'test', path: '/metadata/resourceVersion', value: cur.metadata.resourceVersion }, ...ops], 'json', {
        fieldManager: FIELD_MANAGER,
      });
      return { kind, name, changed: true, webhooks };
    } catch (e) {
      const retriable = e instanceof KubeApiError && (e.code === 409 || e.code === 422);
      if (!retriable || attempt >= 3) throw e;
    }
  }
}
