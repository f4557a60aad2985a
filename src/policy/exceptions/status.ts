// What a PolicyException's status says: `Ready` when every policy and rule it names exists
// and takes exceptions, else why not (the first fault's reason; every fault in the
// message). Pure: the controller feeds it the AdmissionPolicies it watches.
import { setCondition, type Condition } from '../../core/conditions.js';
import type { AdmissionPolicy } from '../types.js';
import type { PolicyException } from './types.js';

export type ExceptionStatus = NonNullable<PolicyException['status']>;

type Fault = { reason: string; message: string };

/** The `Policies` column: `no-latest,require-labels[check-team]`. */
export function policiesText(obj: PolicyException): string {
  return (obj.spec?.exceptions ?? [])
    .map((e) => (e.ruleNames?.length ? `${e.policyName}[${e.ruleNames.join(',')}]` : e.policyName))
    .join(',');
}

function faults(obj: PolicyException, policy: (name: string) => AdmissionPolicy | undefined) {
  const out: Fault[] = [];
  for (const e of obj.spec?.exceptions ?? []) {
    const p = policy(e.policyName);
    if (!p) {
      out.push({
        reason: 'PolicyNotFound',
        message: `AdmissionPolicy "${e.policyName}" not found`,
      });
      continue;
    }
    if (p.spec?.allowExceptions === false) {
      out.push({
        reason: 'ExceptionsNotAllowed',
        message: `AdmissionPolicy "${e.policyName}" does not allow exceptions (spec.allowExceptions: false)`,
      });
      continue;
    }
    const rules = new Set((p.spec?.validate ?? []).map((r) => r.name));
    for (const r of e.ruleNames ?? [])
      if (!rules.has(r))
        out.push({
          reason: 'RuleNotFound',
          message: `AdmissionPolicy "${e.policyName}" has no validate rule "${r}"`,
        });
  }
  return out;
}

/** The status `obj` should hold, given the AdmissionPolicies by name. */
export function exceptionStatus(
  obj: PolicyException,
  policy: (name: string) => AdmissionPolicy | undefined,
  now: Date,
): ExceptionStatus {
  const found = faults(obj, policy);
  const generation = obj.metadata.generation;
  const ready: Omit<Condition, 'lastTransitionTime'> = found.length
    ? {
        type: 'Ready',
        status: 'False',
        reason: found[0]!.reason,
        message: found.map((f) => f.message).join('; '),
      }
    : {
        type: 'Ready',
        status: 'True',
        reason: 'PoliciesFound',
        message: 'every policy and rule named exists and allows exceptions',
      };
  return {
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    policies: policiesText(obj),
    conditions: setCondition(
      obj.status?.conditions ?? [],
      { ...ready, ...(generation !== undefined ? { observedGeneration: generation } : {}) },
      now,
    ),
  };
}

/** The status without its times: equal keys, nothing to write. */
export const exceptionStatusKey = (s: ExceptionStatus) =>
  JSON.stringify({
    ...s,
    conditions: (s.conditions ?? []).map(({ lastTransitionTime: _, ...rest }) => rest),
  });
