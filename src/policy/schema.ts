// The AdmissionPolicy schema, kept in this one place: it is the CRD's openAPIV3Schema
// (crd.ts), so the API server refuses a malformed policy at `kubectl apply`, and the
// schema compile.ts checks a policy against before compiling it (offline and in annex's
// own validating webhook). Structural, as apiextensions.k8s.io/v1 requires: every field
// typed; the free-form JSON Schema and `setIfAbsent` values keep unknown fields.
import type { JsonSchema } from '../core/types.js';
import { conditionsSchema } from '../core/conditions.js';
import { NAME_RULES } from './names.js';

const str = (description: string): JsonSchema => ({ type: 'string', description });
const strings = (description: string): JsonSchema => ({
  type: 'array',
  description,
  items: { type: 'string' },
});

const labelSelector = (description: string): JsonSchema => ({
  type: 'object',
  description,
  properties: {
    matchLabels: {
      type: 'object',
      description: 'Labels the object must carry, each with this exact value.',
      additionalProperties: { type: 'string' },
    },
    matchExpressions: {
      type: 'array',
      description: 'Label requirements, all of which must hold.',
      items: {
        type: 'object',
        required: ['key', 'operator'],
        properties: {
          key: str('The label key.'),
          operator: {
            type: 'string',
            description: 'In, NotIn, Exists or DoesNotExist.',
            enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'],
          },
          values: strings('Values for In and NotIn.'),
        },
      },
    },
  },
});

const match = (description: string): JsonSchema => ({
  type: 'object',
  description,
  properties: {
    kinds: strings('Built-in kinds: "Pod", "apps/Deployment" (the group may be omitted).'),
    resources: {
      type: 'array',
      description: 'Exact resource rules, as in a webhook configuration (for custom resources).',
      items: {
        type: 'object',
        required: ['apiGroups', 'apiVersions', 'resources'],
        properties: {
          apiGroups: strings('API groups; "" is the core group, "*" all.'),
          apiVersions: strings('Versions; "*" all.'),
          resources: strings('Plural resources; "*" all, "pods/status" a subresource.'),
          scope: { type: 'string', enum: ['Cluster', 'Namespaced', '*'] },
        },
      },
    },
    operations: {
      type: 'array',
      description: 'Default CREATE and UPDATE.',
      items: { type: 'string', enum: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] },
    },
    namespaceSelector: labelSelector("Labels of the object's namespace."),
    objectSelector: labelSelector('Labels of the object (or of the old object on DELETE).'),
    namespaces: strings(
      "Namespace names; empty means all (kube-system and annex's own are always excluded).",
    ),
  },
});

/**
 * Rules per list: bounded so that the API server can bound the CEL rules' cost (unbounded,
 * it refuses the CRD: "estimated rule cost exceeds budget").
 */
export const MAX_RULES = 64;

/** What a validate rule checks: exactly one of these. */
export const VALIDATE_KINDS = [
  'nameRule',
  'schema',
  'required',
  'forbidden',
  'expression',
  'podSecurity',
] as const;
export const VALIDATE_KIND_FAULT = `set exactly one of ${VALIDATE_KINDS.join(', ')}`;
/** What a mutate rule does: one or both of these. */
export const MUTATE_KINDS = ['setIfAbsent', 'podTemplateDefaults'] as const;
export const MUTATE_KIND_FAULT = `set ${MUTATE_KINDS.join(' or ')}`;

/**
 * A CEL rule on how many of `fields` a rule sets, refused with the message `annex check`
 * gives (compile.ts checks the same constants offline). Not oneOf/anyOf: the API server
 * answers those with `must validate one and only one schema (oneOf). Found 2 valid
 * alternatives`, naming neither the fields nor the rule.
 */
function kindRule(fields: readonly string[], count: string, fault: string) {
  return {
    rule: `[${fields.map((f) => `has(self.${f})`).join(', ')}].filter(x, x).size() ${count}`,
    messageExpression: `'rule "' + self.name + '": ${fault}'`,
    message: fault,
  };
}

const ruleName = str('Unique within the list; named in every decision and message.');
const path = str(
  "JSONPath (jsonpath-plus) from the object's root, e.g. $.spec.template.spec.containers[*].image.",
);

/** A CEL text: bounded, so that the CRD's own rules over it stay within the API server's cost budget. */
const cel = (description: string): JsonSchema => ({ type: 'string', description, maxLength: 5120 });

/** A path rule needs its path; a CEL or podSecurity rule reads `object` itself and has none. */
export const PATH_FAULT =
  'set path, or expression or podSecurity (a CEL or podSecurity rule has no path)';

/** VAP's named expressions: `variables` and `matchConditions`, verbatim. */
const namedExpressions = (description: string): JsonSchema => ({
  type: 'array',
  description,
  maxItems: MAX_RULES,
  items: {
    type: 'object',
    required: ['name', 'expression'],
    properties: {
      name: { type: 'string', maxLength: 63, pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
      expression: cel('A CEL expression, with the variables of ValidatingAdmissionPolicy.'),
    },
  },
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['name'],
});

const validateRule: JsonSchema = {
  type: 'object',
  required: ['name'],
  properties: {
    name: ruleName,
    path,
    expression: cel(
      'A CEL expression that must be true, as a ValidatingAdmissionPolicy validation: object, oldObject, request, namespaceObject, variables.',
    ),
    messageExpression: cel('A CEL expression giving the message (a string), as VAP.'),
    reason: {
      type: 'string',
      description: "VAP's reason for a CEL rule's denial (default Invalid).",
      enum: ['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge'],
    },
    nameRule: {
      type: 'string',
      description: "One of Kubernetes' name rules, with Kubernetes' own messages.",
      enum: [...NAME_RULES],
    },
    schema: {
      type: 'object',
      description: 'A JSON Schema (draft-07) every matched value must satisfy.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    required: {
      type: 'boolean',
      description: 'The path must match at least one value.',
      enum: [true],
    },
    forbidden: { type: 'boolean', description: 'The path must match nothing.', enum: [true] },
    podSecurity: {
      type: 'object',
      description:
        'The Pod Security Standards, as PodSecurity admission evaluates them, on a Pod or the pod template of a workload (no path).',
      required: ['level'],
      properties: {
        level: { type: 'string', enum: ['privileged', 'baseline', 'restricted'] },
        version: {
          type: 'string',
          description: 'latest (the default) or v1.N.',
          pattern: '^(latest|v1\\.(0|[1-9][0-9]*))$',
        },
      },
    },
    message: str("Replaces the rule's own detail text in each cause."),
  },
  'x-kubernetes-validations': [
    kindRule(VALIDATE_KINDS, '== 1', VALIDATE_KIND_FAULT),
    {
      rule: 'has(self.path) != (has(self.expression) || has(self.podSecurity))',
      messageExpression: `'rule "' + self.name + '": ${PATH_FAULT}'`,
      message: PATH_FAULT,
    },
  ],
};

const mutateRule: JsonSchema = {
  type: 'object',
  required: ['name', 'path'],
  properties: {
    name: ruleName,
    path: str('JSONPath to the objects to change; each match must be an object.'),
    setIfAbsent: {
      type: 'object',
      description: 'Fields set on each match where absent, recursively; never overwrites.',
      'x-kubernetes-preserve-unknown-fields': true,
    },
    podTemplateDefaults: {
      type: 'boolean',
      description: "Apply the API server's own defaults to each match (a PodTemplateSpec).",
    },
  },
  'x-kubernetes-validations': [kindRule(MUTATE_KINDS, '>= 1', MUTATE_KIND_FAULT)],
};

/** An AdmissionPolicy's `spec`. */
export const policySpecSchema: JsonSchema = {
  type: 'object',
  required: ['match'],
  properties: {
    match: match('What the policy applies to (webhook-rule semantics, matchPolicy Equivalent).'),
    exclude: match('Requests the policy skips even when match selects them.'),
    actions: {
      type: 'array',
      description: 'What a failing rule does: Deny (refuse), Warn (kubectl warnings), Audit.',
      minItems: 1,
      items: { type: 'string', enum: ['Deny', 'Warn', 'Audit'] },
      'x-kubernetes-list-type': 'set',
      default: ['Deny'],
    },
    failurePolicy: {
      type: 'string',
      description: 'What an evaluation error means: Fail (a failing rule) or Ignore (pass).',
      enum: ['Fail', 'Ignore'],
      default: 'Fail',
    },
    variables: namedExpressions(
      "Named CEL expressions the CEL rules read as variables.<name>, as a ValidatingAdmissionPolicy's.",
    ),
    matchConditions: namedExpressions(
      'CEL conditions that must all be true for the policy to apply; an error follows failurePolicy (VAP semantics).',
    ),
    validate: {
      type: 'array',
      description: 'Checks, after every matching policy has mutated the object.',
      items: validateRule,
      maxItems: MAX_RULES,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    },
    mutate: {
      type: 'array',
      description: 'Changes, emitted as a JSON Patch.',
      items: mutateRule,
      maxItems: MAX_RULES,
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    },
    allowExceptions: {
      type: 'boolean',
      description:
        'Whether PolicyExceptions may exempt objects from its validate rules (default true).',
      default: true,
    },
  },
};

/** Written by annex: whether the policy compiled, and why not. */
export const policyStatusSchema: JsonSchema = {
  type: 'object',
  properties: {
    ready: { type: 'boolean', description: 'The policy compiled and is enforced.' },
    error: str('The compile error, naming the rule and the fault.'),
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      description: 'The generation ready and error describe.',
    },
    enforcedBy: {
      type: 'string',
      enum: ['ValidatingAdmissionPolicy', 'webhook'],
      description: "Who enforces it: the API server itself (compiled to CEL), or annex's webhook.",
    },
    webhookReason: str('Why the policy stays on the webhook (what CEL cannot express).'),
    actions: str('What a failing rule does, as text ("Deny,Warn"; "Mutate" for mutate rules).'),
    kinds: str('The kinds (or resources) the policy matches, as text.'),
    conditions: conditionsSchema(
      'Ready: the policy compiled. Enforced: annex observed the object that enforces it in the API server (the webhook configuration covering its rules with a caBundle that verifies annex, or its ValidatingAdmissionPolicy and binding).',
    ),
  },
};

/** The whole object, as the CRD's openAPIV3Schema. */
export const policySchema: JsonSchema = {
  type: 'object',
  description:
    'A policy annex enforces on admission: CEL rules, JSONPath rules checked with JSON Schema or Kubernetes name rules, and mutations.',
  required: ['spec'],
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: policySpecSchema,
    status: policyStatusSchema,
  },
};
