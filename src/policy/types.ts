// AdmissionPolicy (policy.annex.dev/v1alpha1, cluster-scoped): the object users apply,
// and the shapes the pure evaluator (compile.ts, evaluate.ts) and the live feature
// (webhooks.ts, controller.ts) share. No Koa or kube code depends on this file, or is needed by it.
import type { FieldCause } from '../admission/verdict.js';
import type { AdmissionRequest, Operation } from '../admission/review.js';
import type { LabelSelectorSpec, RuleWithOperations } from '../admission/webhook.js';
import type { Status } from '../core/status.js';
import type { Condition } from '../core/conditions.js';
import type { JsonSchema } from '../core/types.js';
import type { Exemption } from './exceptions/types.js';

export const POLICY_GROUP = 'policy.annex.dev';
export const POLICY_VERSION = 'v1alpha1';
export const POLICY_KIND = 'AdmissionPolicy';
export const POLICY_PLURAL = 'admissionpolicies';

export type PolicyAction = 'Deny' | 'Warn' | 'Audit';

/** What a policy applies to; webhook-rule semantics (matchPolicy: Equivalent). */
export interface PolicyMatch {
  /** Built-in kinds ("Pod", "apps/Deployment"), as `match.kinds` of a webhook declaration. */
  kinds?: string[];
  /** Or exact resource rules (custom resources). */
  resources?: Omit<RuleWithOperations, 'operations'>[];
  /** Default CREATE and UPDATE. */
  operations?: Operation[];
  namespaceSelector?: LabelSelectorSpec;
  objectSelector?: LabelSelectorSpec;
  /** Namespace names; empty = all (kube-system and annex's own are always excluded). */
  namespaces?: string[];
}

/** Kubernetes' name rules, by the names ValidatingAdmissionPolicy's format library uses. */
export type NameRuleName =
  | 'dns1123Subdomain'
  | 'dns1123Label'
  | 'dns1035Label'
  | 'qualifiedName'
  | 'labelKey'
  | 'labelValue'
  | 'pathSegment';

export interface ValidateRule {
  name: string;
  /** JSONPath (jsonpath-plus) from the object's root: `$.spec.template.spec.containers[*].image`. Not with expression. */
  path?: string;
  /** A CEL expression that must be true (VAP's validation, sent to the API server verbatim). */
  expression?: string;
  /** CEL giving the message of a failed expression (VAP's messageExpression). */
  messageExpression?: string;
  /** VAP's reason for a failed expression; default Invalid. */
  reason?: 'Unauthorized' | 'Forbidden' | 'Invalid' | 'RequestEntityTooLarge';
  /**
   * The Pod Security Standards, as PodSecurity admission evaluates them (src/policy/pss), on a
   * Pod or the pod template of a workload; no path. Not with the others.
   */
  podSecurity?: PodSecurityRule;
  /** Exactly one of nameRule, schema, required, forbidden, expression, podSecurity. */
  nameRule?: NameRuleName;
  /** Every match must satisfy it (ajv, draft-07). */
  schema?: JsonSchema;
  /** The path must match at least one value. */
  required?: boolean;
  /** The path must match nothing. */
  forbidden?: boolean;
  /** Replaces the rule's own detail text in each cause. */
  message?: string;
}

export interface PodSecurityRule {
  level: 'privileged' | 'baseline' | 'restricted';
  /** `latest` (the default) or `v1.N`, as the namespace label spells it. */
  version?: string;
}

export interface NamedCel {
  name: string;
  expression: string;
}

export interface MutateRule {
  name: string;
  /** JSONPath to the objects to change (each match must be an object). */
  path: string;
  /** Fields set on each match where absent (never overwrites). */
  setIfAbsent?: Record<string, unknown>;
  /** The API server's own pod-template defaults on each match (a PodTemplateSpec). */
  podTemplateDefaults?: boolean;
}

export interface AdmissionPolicySpec {
  match: PolicyMatch;
  exclude?: PolicyMatch;
  /** Default [Deny]. */
  actions?: PolicyAction[];
  /** What an evaluation error means: Fail (deny) or Ignore (allow); default Fail. */
  failurePolicy?: 'Fail' | 'Ignore';
  /** VAP's variables: named CEL, read by CEL rules as `variables.<name>`. */
  variables?: NamedCel[];
  /** VAP's matchConditions: all true, or the policy does not apply. */
  matchConditions?: NamedCel[];
  validate?: ValidateRule[];
  mutate?: MutateRule[];
  /** Whether PolicyExceptions may exempt objects from its validate rules; default true. */
  allowExceptions?: boolean;
}

export interface AdmissionPolicy {
  apiVersion: `${typeof POLICY_GROUP}/${typeof POLICY_VERSION}`;
  kind: typeof POLICY_KIND;
  metadata: { name: string; generation?: number; resourceVersion?: string; uid?: string };
  spec: AdmissionPolicySpec;
  status?: {
    ready: boolean;
    error?: string;
    observedGeneration?: number;
    enforcedBy?: 'ValidatingAdmissionPolicy' | 'webhook';
    webhookReason?: string;
    /** Printer-column text: "Deny,Warn", "Mutate". */
    actions?: string;
    /** Printer-column text: "Pod,apps/Deployment". */
    kinds?: string;
    /** `Ready` (compiled) and `Enforced` (its enforcing object observed in the API server). */
    conditions?: Condition[];
  };
}

/** A rule that cannot be compiled: names the rule and the fault. */
export class PolicyCompileError extends Error {
  constructor(
    readonly policy: string,
    readonly rule: string,
    readonly fault: string,
  ) {
    super(`AdmissionPolicy "${policy}": rule "${rule}": ${fault}`);
  }
}

/** One policy's verdict on one request (what the decision log records: never object contents). */
export interface PolicyDecision {
  policy: string;
  rule: string;
  /** Exempt: a PolicyException lifted the rule (no causes; `exception` names it). */
  action: DecisionAction;
  causes: FieldCause[];
  /** `namespace/name` of the PolicyException of an Exempt decision. */
  exception?: string;
}

export type DecisionAction = PolicyAction | 'Exempt';

/** Every matching policy's verdicts folded into one answer. */
export interface Evaluation {
  /** False when any Deny policy failed (or failed to evaluate under failurePolicy Fail). */
  allowed: boolean;
  /** The 422 Invalid Status with every cause of every denying policy, as kubectl prints it. */
  status?: Status;
  warnings: string[];
  /** The object after mutate rules, when any changed it. */
  mutated?: AdmissionRequest['object'];
  decisions: PolicyDecision[];
  /**
   * The policies that applied to the request (match, exclude and matchConditions held or
   * failed to evaluate), by name in the order given: `annex test` and background scans
   * report a rule of the others as `skip`.
   */
  matched?: string[];
  /**
   * Rules that could not be evaluated, of policies with failurePolicy Ignore: the request
   * is allowed and nothing is recorded, as the API server does; `annex test` reports them.
   */
  ignored?: Omit<PolicyDecision, 'action'>[];
  /** Validate rules not evaluated: a PolicyException exempted the request from them. */
  exempted?: Exemption[];
}
