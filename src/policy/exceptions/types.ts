// PolicyException (policy.annex.dev/v1alpha1, namespaced): named objects exempted from
// named AdmissionPolicies or rules, on the record (a required reason). Shaped as Kyverno's
// PolicyException (kyverno.io/v2): `exceptions[].policyName/ruleNames` and
// `match.any/all[].resources` — see docs/policies.md for where annex differs.
import type { LabelSelectorSpec } from '../../admission/webhook.js';
import type { Condition } from '../../core/conditions.js';
import { POLICY_GROUP, POLICY_VERSION } from '../types.js';

export const EXCEPTION_KIND = 'PolicyException';
export const EXCEPTION_PLURAL = 'policyexceptions';
export const EXCEPTIONS_PATH = `/apis/${POLICY_GROUP}/${POLICY_VERSION}/${EXCEPTION_PLURAL}`;

/** One filter: every field given must hold (Kyverno's ResourceDescription, a subset). */
export interface ResourceFilter {
  resources: {
    /** "Pod", "apps/Deployment" (group/Kind), "v1/Pod" (version/Kind), "apps/v1/Deployment". */
    kinds?: string[];
    /** Object names; `*` and `?` are wildcards. */
    names?: string[];
    /** Namespace names; `*` and `?` are wildcards. */
    namespaces?: string[];
    /** The object's labels. */
    selector?: LabelSelectorSpec;
  };
}

export interface PolicyExceptionSpec {
  /** Why: shown in every decision and report result the exception leads to. */
  reason: string;
  exceptions: { policyName: string; ruleNames?: string[] }[];
  /** Any filter of `any`, and every filter of `all` (both when both are given). */
  match: { any?: ResourceFilter[]; all?: ResourceFilter[] };
}

export interface PolicyException {
  apiVersion: `${typeof POLICY_GROUP}/${typeof POLICY_VERSION}`;
  kind: typeof EXCEPTION_KIND;
  metadata: {
    name: string;
    namespace?: string;
    generation?: number;
    uid?: string;
    resourceVersion?: string;
  };
  spec: PolicyExceptionSpec;
  status?: {
    observedGeneration?: number;
    /** Printer-column text: "require-labels/check-team,no-latest". */
    policies?: string;
    conditions?: Condition[];
  };
}

/** An exemption of one rule of one request: the rule and the exception that lifted it. */
export interface Exemption {
  policy: string;
  rule: string;
  /** `namespace/name` of the PolicyException. */
  exception: string;
}
