// Per rule, where a policy's rules would run, and why — what `annex policy cel` prints and
// the live side can put in a status condition ("rule r runs in the webhook: …"). A policy
// runs natively only when every rule and its match do; otherwise all of it stays on the
// webhook, so one verdict never comes from two places.
import type { CompiledPolicy } from '../compile.js';
import { compileToCel, type CelOptions } from './compile.js';
import { mutateRuleToCel } from './mutate.js';
import { ruleToCel } from './rules.js';

export interface RuleEngine {
  rule: string;
  kind: 'validate' | 'mutate';
  runsIn: 'ValidatingAdmissionPolicy' | 'MutatingAdmissionPolicy' | 'webhook';
  /** Why the rule runs in the webhook: its own reason, or the policy's. */
  reason?: string;
}

export function explainCel(policy: CompiledPolicy, opts: CelOptions = {}): RuleEngine[] {
  const whole = compileToCel(policy, opts);
  const policyReason = 'reason' in whole ? whole.reason : undefined;
  const entry = (
    rule: string,
    kind: RuleEngine['kind'],
    own: { reason: string } | { cel: string },
    native: RuleEngine['runsIn'],
  ): RuleEngine => {
    if ('reason' in own) return { rule, kind, runsIn: 'webhook', reason: own.reason };
    if (policyReason !== undefined) {
      return {
        rule,
        kind,
        runsIn: 'webhook',
        reason: `the policy runs in the webhook: ${policyReason}`,
      };
    }
    return { rule, kind, runsIn: native };
  };
  return [
    ...policy.validate.map((r) =>
      entry(r.name, 'validate', ruleToCel(r, 'object'), 'ValidatingAdmissionPolicy'),
    ),
    ...policy.mutate.map((r) =>
      entry(r.name, 'mutate', mutateRuleToCel(r, 'object'), 'MutatingAdmissionPolicy'),
    ),
  ];
}
