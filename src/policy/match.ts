// Which requests a policy applies to: webhook-rule semantics (the rules, namespace and
// object selectors of admissionregistration/v1), plus `namespaces` and `exclude`. The
// namespaces annex must never block — kube-system and its own — are always excluded, as
// the webhook configurations' namespaceSelector excludes them (src/manifests/render.ts).
import type { AdmissionRequest } from '../admission/review.js';
import { ruleMatches, selectorMatches } from '../admission/webhook.js';
import type { CompiledMatch, CompiledPolicy } from './compile.js';
import { isRecord } from './paths.js';

export interface MatchContext {
  /** Labels of the request's namespace; default only `kubernetes.io/metadata.name`, which the API server always sets. */
  namespaceLabels?: Record<string, string>;
  /** annex's own namespace, never subject to policies. Default `annex-system`. */
  annexNamespace?: string;
}

export const DEFAULT_ANNEX_NAMESPACE = 'annex-system';

const isNamespaceRequest = (req: AdmissionRequest) =>
  req.resource.group === '' && req.resource.resource === 'namespaces';

function labelsOf(o: unknown): Record<string, unknown> {
  const meta = isRecord(o) ? o.metadata : undefined;
  const labels = isRecord(meta) ? meta.labels : undefined;
  return isRecord(labels) ? labels : {};
}

/** The namespace a request is in; a Namespace request is "in" itself, as for namespaceSelector. */
function namespaceOf(req: AdmissionRequest): string {
  if (req.namespace) return req.namespace;
  if (!isNamespaceRequest(req)) return '';
  const name = req.name || req.object?.metadata?.name || req.oldObject?.metadata?.name;
  return typeof name === 'string' ? name : '';
}

function namespaceSelected(m: CompiledMatch, req: AdmissionRequest, ctx: MatchContext): boolean {
  if (!m.namespaceSelector) return true;
  // Namespace objects are matched on their own labels; other cluster-scoped objects always match.
  if (isNamespaceRequest(req)) {
    return [req.object, req.oldObject]
      .filter((o) => o)
      .some((o) => selectorMatches(m.namespaceSelector ?? {}, labelsOf(o)));
  }
  if (!req.namespace) return true;
  const labels = ctx.namespaceLabels ?? { 'kubernetes.io/metadata.name': req.namespace };
  return selectorMatches(m.namespaceSelector, labels);
}

function objectSelected(m: CompiledMatch, req: AdmissionRequest): boolean {
  if (!m.objectSelector) return true;
  const objects = [req.object, req.oldObject].filter((o) => o);
  return (objects.length ? objects : [{}]).some((o) =>
    selectorMatches(m.objectSelector ?? {}, labelsOf(o)),
  );
}

function blockMatches(m: CompiledMatch, req: AdmissionRequest, ctx: MatchContext): boolean {
  if (!m.rules.some((r) => ruleMatches(r, req))) return false;
  if (m.namespaces && !m.namespaces.has(namespaceOf(req))) return false;
  return namespaceSelected(m, req, ctx) && objectSelected(m, req);
}

/** Whether the API server would send `req` to this policy, and the policy takes it. */
export function policyMatches(
  p: CompiledPolicy,
  req: AdmissionRequest,
  ctx: MatchContext = {},
): boolean {
  const ns = namespaceOf(req);
  if (ns === 'kube-system' || ns === (ctx.annexNamespace ?? DEFAULT_ANNEX_NAMESPACE)) return false;
  if (!blockMatches(p.match, req, ctx)) return false;
  return !(p.exclude && blockMatches(p.exclude, req, ctx));
}
