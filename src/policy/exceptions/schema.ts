// The PolicyException schema: the CRD's openAPIV3Schema (crd.ts), so the API server
// refuses a malformed exception at `kubectl apply`. Structural: every field typed, lists
// bounded so that the CEL rules below stay within the API server's cost budget.
import type { JsonSchema } from '../../core/types.js';
import { conditionsSchema } from '../../core/conditions.js';

const str = (description: string, maxLength = 253): JsonSchema => ({
  type: 'string',
  description,
  maxLength,
});
const strings = (description: string, maxItems = 64): JsonSchema => ({
  type: 'array',
  description,
  maxItems,
  items: { type: 'string', maxLength: 253 },
});

const FILTER_FAULT = 'set at least one of kinds, names, namespaces, selector';

const filter: JsonSchema = {
  type: 'object',
  required: ['resources'],
  properties: {
    resources: {
      type: 'object',
      description: 'What the object must be: every field given must hold.',
      properties: {
        kinds: strings(
          'Kinds: "Pod", "apps/Deployment" (group/Kind), "v1/Pod" (version/Kind) or "apps/v1/Deployment".',
        ),
        names: strings('Object names; * and ? are wildcards.'),
        namespaces: strings(
          "Namespace names; * and ? are wildcards. Outside annex's namespace, only the exception's own namespace can match.",
        ),
        selector: {
          type: 'object',
          description: "The object's labels.",
          properties: {
            matchLabels: {
              type: 'object',
              additionalProperties: { type: 'string' },
            },
            matchExpressions: {
              type: 'array',
              maxItems: 16,
              items: {
                type: 'object',
                required: ['key', 'operator'],
                properties: {
                  key: { type: 'string' },
                  operator: { type: 'string', enum: ['In', 'NotIn', 'Exists', 'DoesNotExist'] },
                  values: { type: 'array', items: { type: 'string' } },
                },
              },
            },
          },
        },
      },
      'x-kubernetes-validations': [
        {
          rule: 'has(self.kinds) || has(self.names) || has(self.namespaces) || has(self.selector)',
          message: FILTER_FAULT,
        },
      ],
    },
  },
};

const filters = (description: string): JsonSchema => ({
  type: 'array',
  description,
  minItems: 1,
  maxItems: 16,
  items: filter,
});

export const exceptionSpecSchema: JsonSchema = {
  type: 'object',
  required: ['reason', 'exceptions', 'match'],
  properties: {
    reason: {
      ...str('Why these objects are exempted: named in every decision and report result.', 1024),
      minLength: 1,
    },
    exceptions: {
      type: 'array',
      description:
        'The AdmissionPolicies, and optionally their rules, the objects are exempted from.',
      minItems: 1,
      maxItems: 64,
      items: {
        type: 'object',
        required: ['policyName'],
        properties: {
          policyName: { ...str('The AdmissionPolicy.'), minLength: 1 },
          ruleNames: strings("The policy's rules; absent: every rule of the policy."),
        },
      },
    },
    match: {
      type: 'object',
      description: 'The objects exempted: any filter of `any`, and every filter of `all`.',
      properties: {
        any: filters('At least one of these must match.'),
        all: filters('Every one of these must match.'),
      },
      'x-kubernetes-validations': [
        { rule: 'has(self.any) || has(self.all)', message: 'set any or all' },
      ],
    },
  },
};

export const exceptionStatusSchema: JsonSchema = {
  type: 'object',
  properties: {
    observedGeneration: {
      type: 'integer',
      format: 'int64',
      description: 'The generation the conditions describe.',
    },
    policies: str('The policies (and rules) named, as text.', 4096),
    conditions: conditionsSchema(
      'Ready: every policy and rule named exists and allows exceptions (reasons PoliciesFound, PolicyNotFound, RuleNotFound, ExceptionsNotAllowed).',
    ),
  },
};

export const exceptionSchema: JsonSchema = {
  type: 'object',
  description:
    'Exempts named objects from named AdmissionPolicies or rules, with a reason: honoured at admission, by `annex check` and in PolicyReports (result skip).',
  required: ['spec'],
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: exceptionSpecSchema,
    status: exceptionStatusSchema,
  },
};
