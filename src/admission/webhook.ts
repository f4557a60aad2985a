// A webhook is one declaration: the handler, and what the API server sends it. The same
// rules are rendered into the Validating/MutatingWebhookConfiguration (src/manifests/)
// and checked at run time before the handler is called, so the two cannot drift.
import type {
  Admit,
  AdmissionRequest,
  LabelSelectorSpec,
  Registration,
  RuleWithOperations,
  Webhook,
} from '../core/webhook.js';
import { rulesForKinds } from './kinds.js';

// The declaration's types are the contract's (src/core/webhook.ts); here for their importers.
export type {
  Admit,
  LabelSelectorSpec,
  Registration,
  ReviewContext,
  RuleWithOperations,
  Webhook,
} from '../core/webhook.js';
export { webhookPath } from '../core/webhook.js';

export type WebhookInit = Omit<Registration, 'name' | 'rules'> & {
  /**
   * Fully qualified, a DNS subdomain ("pinned-images.example.com"): served at
   * /validate/<name> or /mutate/<name>; its first label names the configuration (`annex-<label>`).
   */
  name: string;
  /** Webhook rules, as in the configuration; or `match` for built-in kinds. */
  rules?: RuleWithOperations[];
  /** Built-in kinds ("Pod", "apps/Deployment"); operations default to CREATE and UPDATE. */
  match?: { kinds: string[]; operations?: RuleWithOperations['operations'] };
  configuration?: string;
  description?: string;
  /** More entries for the same handler (e.g. another failurePolicy for other resources). */
  also?: Registration[];
  /**
   * The install registers it before annex runs (its placeholder in manifests/registrations.yaml
   * keeps the rules, without a caBundle), so until annex answers, every write it matches is
   * refused by its failurePolicy instead of admitted unseen: for a webhook whose record annex
   * later trusts (ExternalMetric authors).
   */
  enforcedBeforeReady?: boolean;
  admit: Admit;
};

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function declare(type: Webhook['type'], init: WebhookInit): Webhook {
  const {
    name,
    configuration,
    description,
    also = [],
    enforcedBeforeReady,
    admit,
    match,
    rules,
    ...registration
  } = init;
  const segment = name.split('.')[0] ?? '';
  if (!rules?.length && !match?.kinds.length) {
    throw new TypeError(`webhook ${name}: declare what it matches (rules, or match.kinds)`);
  }
  // The whole name is the URL path's last segment: a DNS subdomain needs no escaping there.
  if (!DNS_SUBDOMAIN.test(name) || name.length > 253 || !name.includes('.')) {
    throw new TypeError(
      `webhook name ${JSON.stringify(name)} must be fully qualified (e.g. "pinned-images.example.com")`,
    );
  }
  return {
    name: segment,
    type,
    configuration: configuration ?? `annex-${segment}`,
    ...(description ? { description } : {}),
    registrations: [
      {
        name,
        rules: [
          ...(rules ?? []),
          ...(match ? rulesForKinds(match.kinds, match.operations ?? ['CREATE', 'UPDATE']) : []),
        ],
        ...registration,
      },
      ...also,
    ],
    ...(enforcedBeforeReady ? { enforcedBeforeReady } : {}),
    admit,
  };
}

/** A validating webhook: `admit` returns allow(), deny…() or warnings. */
export const validatingWebhook = (init: WebhookInit): Webhook => declare('validating', init);

/** A mutating webhook: `admit` may return mutate(changedObject) and annex computes the JSON Patch. */
export const mutatingWebhook = (init: WebhookInit): Webhook => declare('mutating', init);

const has = (list: readonly string[], v: string) => list.includes('*') || list.includes(v);

function resourceMatches(patterns: readonly string[], resource: string, sub: string): boolean {
  return patterns.some((p) => {
    // Split at the first slash only, as the API server does ("a/b/c" is a/"b/c").
    const slash = p.indexOf('/');
    const [pr, ps] = slash < 0 ? [p, ''] : [p.slice(0, slash), p.slice(slash + 1)];
    return (pr === '*' || pr === resource) && (ps === '*' || ps === sub);
  });
}

/**
 * Kinds the API server never sends to webhooks, whatever the rules, so that a broken
 * webhook or policy can always be repaired (k8s.io/apiserver IsExemptAdmissionConfigurationResource).
 */
const NEVER_SENT = new Set([
  'ValidatingWebhookConfiguration',
  'MutatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'MutatingAdmissionPolicy',
  'MutatingAdmissionPolicyBinding',
]);

/** Whether the API server sends `req` to a webhook with this rule (k8s.io/apiserver rules.Matcher). */
export function ruleMatches(rule: RuleWithOperations, req: AdmissionRequest): boolean {
  const r = req.resource;
  if (req.kind.group === 'admissionregistration.k8s.io' && NEVER_SENT.has(req.kind.kind)) {
    return false;
  }
  // A Namespace is cluster-scoped, though the API server sets `namespace` to its own name.
  const namespaced =
    !(r.group === '' && r.version === 'v1' && r.resource === 'namespaces') && !!req.namespace;
  const scope = rule.scope ?? '*';
  return (
    (scope === '*' || (scope === 'Namespaced' ? namespaced : scope === 'Cluster' && !namespaced)) &&
    has(rule.operations, req.operation) &&
    has(rule.apiGroups, r.group) &&
    has(rule.apiVersions, r.version) &&
    resourceMatches(rule.resources, r.resource, req.subResource ?? '')
  );
}

function labelsOf(o: unknown): Record<string, unknown> {
  const labels = (o as { metadata?: { labels?: unknown } } | null | undefined)?.metadata?.labels;
  return typeof labels === 'object' && labels !== null ? (labels as Record<string, unknown>) : {};
}

export function selectorMatches(sel: LabelSelectorSpec, labels: Record<string, unknown>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const present = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const inValues = present && typeof value === 'string' && (e.values ?? []).includes(value);
    const ok =
      e.operator === 'In'
        ? inValues
        : e.operator === 'NotIn'
          ? !inValues
          : e.operator === 'Exists'
            ? present
            : !present;
    if (!ok) return false;
  }
  return true;
}

/**
 * The first registration the API server could have sent this request for. Rules and the
 * object selector are checked here; the namespace selector needs the namespace's labels,
 * which only the API server has, so it is trusted.
 */
export function matchingRegistration(w: Webhook, req: AdmissionRequest): Registration | undefined {
  return w.registrations.find(
    (reg) =>
      reg.rules.some((rule) => ruleMatches(rule, req)) &&
      (!reg.objectSelector ||
        selectorMatches(reg.objectSelector, labelsOf(req.object)) ||
        selectorMatches(reg.objectSelector, labelsOf(req.oldObject))),
  );
}
