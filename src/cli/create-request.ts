// The AdmissionRequest a create of an object would send to annex's webhooks and policies,
// for the commands that answer offline (annex check, annex defaults --admission=annex).
import { rulesForKinds } from '../admission/kinds.js';
import { groupOf } from '../admission/names/index.js';
import type { AdmissionRequest } from '../admission/review.js';
import type { KubeObject } from '../core/types.js';

/** kubectl's plural for a kind: the built-in table, else its guess (UnsafeGuessKindToResource). */
function resourceOf(group: string, kind: string): string {
  try {
    const [rule] = rulesForKinds([group ? `${group}/${kind}` : kind], ['CREATE']);
    if (rule?.resources[0]) return rule.resources[0];
  } catch {
    // not a kind annex knows: guess as kubectl does
  }
  const k = kind.toLowerCase();
  if (k.endsWith('s')) return `${k}es`;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/** A dry-run CREATE of `obj` (its name and namespace as the API server will have them). */
export function createRequest(obj: KubeObject): AdmissionRequest & { name: string } {
  const apiVersion = String(obj.apiVersion);
  const kind = String(obj.kind);
  const group = groupOf(apiVersion);
  const version = apiVersion.slice(apiVersion.indexOf('/') + 1);
  const meta = (obj.metadata ?? {}) as Record<string, unknown>;
  const name = typeof meta.name === 'string' ? meta.name : '';
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : undefined;
  return {
    uid: 'annex-offline',
    kind: { group, version, kind },
    resource: { group, version, resource: resourceOf(group, kind) },
    name,
    ...(namespace ? { namespace } : {}),
    operation: 'CREATE',
    userInfo: {},
    object: obj,
    dryRun: true,
  };
}
