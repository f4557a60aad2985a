// Keeps the cluster's generated Validating/MutatingAdmissionPolicies and bindings equal to what the
// policy set compiles to: server-side apply (field manager `annex`) of each, then delete
// of every annex-labelled one no policy produces any more. The policy controller calls
// syncCel(client, policies) after each change of its policy set and evaluates in its
// webhook only the policies for which webhookPolicies() keeps them.
import type { KubeClient } from '../../kube/client.js';
import type { CompiledPolicy } from '../compile.js';
import {
  compileToCel,
  POLICY_LABEL,
  VAP_API_VERSION,
  type CelObjects,
  type CelOptions,
} from './compile.js';

const BASE = `/apis/${VAP_API_VERSION}`;
const PLURAL = {
  ValidatingAdmissionPolicy: 'validatingadmissionpolicies',
  ValidatingAdmissionPolicyBinding: 'validatingadmissionpolicybindings',
  MutatingAdmissionPolicy: 'mutatingadmissionpolicies',
  MutatingAdmissionPolicyBinding: 'mutatingadmissionpolicybindings',
} as const;
type Kind = keyof typeof PLURAL;

/**
 * Audit decisions belong in annex's decision log (the API server would write them to its
 * audit log instead): a policy recording them stays on annex's webhook.
 */
export const recordsAudit = (p: CompiledPolicy): boolean => p.actions.includes('Audit');

/** The generated objects of every policy that compiles, by policy name. */
export function celObjects(
  policies: readonly CompiledPolicy[],
  opts: CelOptions = {},
): Map<string, CelObjects> {
  const out = new Map<string, CelObjects>();
  for (const p of policies) {
    const r = compileToCel(p, opts);
    if (!('reason' in r)) out.set(p.name, r);
  }
  return out;
}

/** The policies the webhook must still evaluate: those the API server does not (no rule runs twice). */
export function webhookPolicies(
  policies: readonly CompiledPolicy[],
  native: ReadonlyMap<string, CelObjects>,
): CompiledPolicy[] {
  return policies.filter((p) => !native.has(p.name));
}

interface Named {
  metadata: { name: string };
}

/** Apply the generated objects (policy before binding) and delete stale annex-owned ones. */
export async function syncCel(
  client: KubeClient,
  native: ReadonlyMap<string, CelObjects>,
): Promise<void> {
  const want = new Set<string>();
  for (const { vap, binding, map, mapBinding } of native.values()) {
    // A policy before its binding.
    const objects = [vap, binding, map, mapBinding].filter((o) => o !== undefined);
    for (const o of objects as unknown as (Named & { kind: Kind })[]) {
      want.add(`${o.kind}/${o.metadata.name}`);
      await client.patch(`${BASE}/${PLURAL[o.kind]}/${o.metadata.name}`, o, 'apply', {
        fieldManager: 'annex',
        force: true,
      });
    }
  }
  // Bindings first, so a policy is never left bound to nothing being deleted.
  const kinds: Kind[] = [
    'ValidatingAdmissionPolicyBinding',
    'ValidatingAdmissionPolicy',
    'MutatingAdmissionPolicyBinding',
    'MutatingAdmissionPolicy',
  ];
  for (const kind of kinds) {
    const list = await client.list<Named>(`${BASE}/${PLURAL[kind]}`, {
      labelSelector: POLICY_LABEL,
    });
    for (const o of list.items) {
      if (!want.has(`${kind}/${o.metadata.name}`)) {
        await client.delete(`${BASE}/${PLURAL[kind]}/${o.metadata.name}`);
      }
    }
  }
}
