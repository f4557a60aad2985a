// A CompiledPolicy → a ValidatingAdmissionPolicy + ValidatingAdmissionPolicyBinding
// (admissionregistration.k8s.io/v1) for its validate rules, and a MutatingAdmissionPolicy
// + binding for its mutate rules, that the API server enforces in-process with the
// webhook path's verdicts and messages, or the reason it cannot (the policy then stays on
// the webhook). Pure: no kube calls; applying the objects is apply.ts'.
//
// Shape of the generated policy: one variable per rule, each a list(string) of that
// rule's causes rendered `<field>: <message>` (rules.ts); `causes` is their
// concatenation; ONE validation, `size(causes) == 0`, whose messageExpression joins them
// as denyInvalid does (`c` for one cause, `[c1, c2]` for more). So the text after the API
// server's `denied request: ` is the webhook's text after `<Kind> "<name>" is invalid: `.
//
// CEL rules (validate rules with `expression`) are not translated: their text, the
// policy's variables and matchConditions go into the VAP as written. A policy mixing CEL
// and path rules stays on the webhook.
//
// The translatable subset (anything else → { reason }):
// - validate rules; mutate rules with setIfAbsent (→ a MutatingAdmissionPolicy of
//   JSONPatch `add` ops for each absent field, mutate.ts), `[*]` over lists only;
//   a policy is native only when all its rules are;
// - paths: `$` then `.field`, `['key']`, `[*]`/`.*` steps (rules.ts parsePath);
// - nameRule dns1123Label, dns1123Subdomain, dns1035Label, labelValue (CEL's
//   format library, same texts on v1.37.2); required; forbidden;
// - schema keywords type (string, integer, number, boolean), const and enum of scalars,
//   minimum, maximum, minLength, maxLength, pattern (regex.ts), title, description;
// - actions: any set but Deny together with Warn (a binding refuses that pair);
// - match: kinds/resources, operations, namespaceSelector, objectSelector, namespaces
//   (on namespaced resources); exclude: kinds/resources only, or namespaces only.
import type { RuleWithOperations } from '../../admission/webhook.js';
import type { LabelSelectorSpec } from '../../admission/webhook.js';
import type { CompiledMatch, CompiledPolicy } from '../compile.js';
import { DEFAULT_ANNEX_NAMESPACE } from '../match.js';
import { mutateRuleToCel } from './mutate.js';
import { ruleToCel } from './rules.js';

export const VAP_API_VERSION = 'admissionregistration.k8s.io/v1';
/** The label that marks (and finds) what annex generated, with the policy's name. */
export const POLICY_LABEL = 'policy.annex.dev/policy';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'annex' };

/** What a policy compiles to: a VAP + binding for its validate rules, a MAP + binding for its mutate rules. */
export interface CelObjects {
  vap?: Record<string, unknown>;
  binding?: Record<string, unknown>;
  map?: Record<string, unknown>;
  mapBinding?: Record<string, unknown>;
}

export interface CelOptions {
  /** annex's own namespace, never subject to policies. Default annex-system. */
  annexNamespace?: string;
}

/** The generated objects' names: `annex-<policy>` and `annex-<policy>-binding`. */
export const vapName = (policy: string) => `annex-${policy}`;
export const bindingName = (policy: string) => `${vapName(policy)}-binding`;

type Selector = LabelSelectorSpec & {
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
};

const NS_LABEL = 'kubernetes.io/metadata.name';

function withRequirement(
  s: LabelSelectorSpec | undefined,
  operator: 'In' | 'NotIn',
  values: string[],
): Selector {
  const base = (s ?? {}) as Selector;
  return {
    ...base,
    matchExpressions: [...(base.matchExpressions ?? []), { key: NS_LABEL, operator, values }],
  };
}

const coversNamespaces = (rules: readonly RuleWithOperations[]) =>
  rules.some((r) => r.resources.some((x) => x === '*' || x.startsWith('*/') || x === 'namespaces'));

function resourceRules(rules: readonly RuleWithOperations[], scope?: 'Namespaced') {
  return rules.map((r) => ({
    apiGroups: r.apiGroups,
    apiVersions: r.apiVersions,
    operations: r.operations,
    resources: r.resources,
    ...(scope ? { scope } : r.scope ? { scope: r.scope } : {}),
  }));
}

function matchConstraints(
  p: CompiledPolicy,
  annexNs: string,
): Record<string, unknown> | { reason: string } {
  const m: CompiledMatch = p.match;
  const never = ['kube-system', annexNs];
  let namespaceSelector = withRequirement(m.namespaceSelector, 'NotIn', never);
  let scope: 'Namespaced' | undefined;
  if (m.namespaces) {
    // annex matches nothing cluster-scoped then (its namespace is ''), but a Namespace
    // object is "in" itself: only resource rules that cannot name Namespaces translate.
    if (coversNamespaces(m.rules)) {
      return { reason: 'match.namespaces with rules covering Namespace objects has no VAP form' };
    }
    namespaceSelector = withRequirement(namespaceSelector, 'In', [...m.namespaces]);
    scope = 'Namespaced';
  }
  const out: Record<string, unknown> = {
    matchPolicy: 'Equivalent',
    resourceRules: resourceRules(m.rules, scope),
    namespaceSelector,
    ...(m.objectSelector ? { objectSelector: m.objectSelector } : {}),
  };
  const x = p.exclude;
  if (x) {
    const catchAll = x.rules.some((r) => r.resources.includes('*') && r.apiGroups.includes('*'));
    if (x.namespaceSelector || x.objectSelector) {
      return { reason: 'exclude with a namespaceSelector or objectSelector has no VAP form' };
    }
    if (catchAll && x.namespaces) {
      namespaceSelector = withRequirement(namespaceSelector, 'NotIn', [...x.namespaces]);
      out.namespaceSelector = namespaceSelector;
    } else if (!catchAll && !x.namespaces) {
      out.excludeResourceRules = resourceRules(x.rules);
    } else {
      return { reason: 'exclude naming both kinds and namespaces has no VAP form' };
    }
  }
  return out;
}

const labels = (policy: string) => ({ ...MANAGED_BY, [POLICY_LABEL]: policy });

type Validations = { variables: { name: string; expression: string }[]; validations: unknown[] };

/**
 * CEL rules exactly as written: the policy's variables and each rule's expression, message,
 * messageExpression and reason, untranslated, so the API server runs the text annex runs.
 */
function celValidations(policy: CompiledPolicy): Validations | { reason: string } {
  const validations: unknown[] = [];
  for (const rule of policy.validate) {
    if (rule.type !== 'expression') {
      return { reason: `rule "${rule.name}" runs in the webhook: path rules beside CEL rules` };
    }
    const c = rule.cel;
    validations.push({
      expression: c.expression.text,
      ...(c.message !== undefined ? { message: c.message } : {}),
      ...(c.messageExpression ? { messageExpression: c.messageExpression.text } : {}),
      reason: c.reason,
    });
  }
  const variables = policy.variables.map((v) => ({ name: v.name, expression: v.expression.text }));
  return { variables, validations };
}

/** The validations: one variable per rule, their concatenation, one validation. */
function validationsOf(policy: CompiledPolicy): Validations | { reason: string } {
  if (policy.validate.some((r) => r.type === 'expression')) return celValidations(policy);
  const paths = new Set<string>();
  const variables: { name: string; expression: string }[] = [
    // A DELETE has only the old object; the webhook validates that.
    { name: 'target', expression: 'object != null ? object : oldObject' },
  ];
  for (const [i, rule] of policy.validate.entries()) {
    // denyInvalid drops duplicate causes; two rules on one path could yield the same one.
    if (paths.has(rule.path)) {
      return {
        reason: `rule "${rule.name}" runs in the webhook: a second rule on the path ${rule.path}`,
      };
    }
    paths.add(rule.path);
    const r = ruleToCel(rule, 'variables.target');
    if ('reason' in r) return { reason: `rule "${rule.name}" runs in the webhook: ${r.reason}` };
    variables.push({ name: `rule${i}`, expression: r.cel });
  }
  const ruleVars = policy.validate.map((_, i) => `variables.rule${i}`);
  variables.push({ name: 'causes', expression: ruleVars.join(' + ') });
  const validations = [
    {
      expression: 'size(variables.causes) == 0',
      messageExpression:
        "size(variables.causes) == 1 ? variables.causes[0] : '[' + variables.causes.join(', ') + ']'",
      reason: 'Invalid',
    },
  ];
  return { variables, validations };
}

/** The mutations, in rule order (as evaluate.ts applies them). */
function mutationsOf(policy: CompiledPolicy): { mutations: unknown[] } | { reason: string } {
  const mutations: unknown[] = [];
  for (const rule of policy.mutate) {
    const r = mutateRuleToCel(rule, 'object');
    if ('reason' in r)
      return { reason: `mutate rule "${rule.name}" runs in the webhook: ${r.reason}` };
    mutations.push({ patchType: 'JSONPatch', jsonPatch: { expression: r.cel } });
  }
  return { mutations };
}

/** A MutatingAdmissionPolicy mutates creates and updates only; so does the webhook path. */
function mutatingRules(rules: unknown): unknown[] {
  return (rules as { operations: string[] }[])
    .map((r) => ({
      ...r,
      operations: r.operations.includes('*')
        ? ['CREATE', 'UPDATE']
        : r.operations.filter((o) => o === 'CREATE' || o === 'UPDATE'),
    }))
    .filter((r) => r.operations.length > 0);
}

/** The objects enforcing `policy` in the API server, or why it must stay on the webhook. */
export function compileToCel(
  policy: CompiledPolicy,
  opts: CelOptions = {},
): CelObjects | { reason: string } {
  if (policy.validate.length === 0 && policy.mutate.length === 0) {
    return { reason: 'the policy has no rules' };
  }
  if (policy.actions.includes('Deny') && policy.actions.includes('Warn')) {
    return {
      reason:
        'actions Deny and Warn together: a ValidatingAdmissionPolicyBinding refuses that pair',
    };
  }
  const validations = validationsOf(policy);
  if ('reason' in validations) return validations;
  const mutations = mutationsOf(policy);
  if ('reason' in mutations) return mutations;
  const matched = matchConstraints(policy, opts.annexNamespace ?? DEFAULT_ANNEX_NAMESPACE);
  if (typeof matched.reason === 'string') return { reason: matched.reason };
  const constraints = matched as Record<string, unknown>;
  const name = vapName(policy.name);
  // Verbatim, as the CEL rules: VAP's and MAP's matchConditions are the policy's.
  const matchConditions = policy.matchConditions.length
    ? {
        matchConditions: policy.matchConditions.map((c) => ({
          name: c.name,
          expression: c.expression.text,
        })),
      }
    : {};
  const metadata = (n: string) => ({ name: n, labels: labels(policy.name) });
  const out: CelObjects = {};
  if (policy.validate.length) {
    out.vap = {
      apiVersion: VAP_API_VERSION,
      kind: 'ValidatingAdmissionPolicy',
      metadata: metadata(name),
      spec: {
        failurePolicy: policy.failurePolicy,
        matchConstraints: constraints,
        ...matchConditions,
        variables: validations.variables,
        validations: validations.validations,
      },
    };
    out.binding = {
      apiVersion: VAP_API_VERSION,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: metadata(bindingName(policy.name)),
      spec: { policyName: name, validationActions: [...policy.actions] },
    };
  }
  if (policy.mutate.length) {
    const rules = mutatingRules(constraints.resourceRules);
    if (rules.length === 0) return { reason: 'mutate rules on no CREATE or UPDATE' };
    out.map = {
      apiVersion: VAP_API_VERSION,
      kind: 'MutatingAdmissionPolicy',
      metadata: metadata(name),
      spec: {
        failurePolicy: policy.failurePolicy,
        reinvocationPolicy: 'Never',
        ...matchConditions,
        matchConstraints: {
          ...constraints,
          resourceRules: rules,
          ...(constraints.excludeResourceRules
            ? { excludeResourceRules: mutatingRules(constraints.excludeResourceRules) }
            : {}),
        },
        mutations: mutations.mutations,
      },
    };
    out.mapBinding = {
      apiVersion: VAP_API_VERSION,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: metadata(bindingName(policy.name)),
      spec: { policyName: name },
    };
  }
  return out;
}

/** What the live side puts in the AdmissionPolicy's status: who enforces it, and why. */
export interface CelStatus {
  enforcedBy: 'ValidatingAdmissionPolicy' | 'webhook';
  reason?: string;
}

export function celStatus(policy: CompiledPolicy, opts: CelOptions = {}): CelStatus {
  const r = compileToCel(policy, opts);
  return 'reason' in r
    ? { enforcedBy: 'webhook', reason: r.reason }
    : { enforcedBy: 'ValidatingAdmissionPolicy' };
}
