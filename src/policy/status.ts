// What an AdmissionPolicy's status says, from what annex has observed: `Ready` (it compiled)
// and `Enforced` (the object that enforces it is in the API server: the webhook
// configuration's rules cover the policy's and its caBundle verifies annex's serving
// certificate, or its ValidatingAdmissionPolicy and binding were stored). Pure: the
// controller feeds it observations and writes what it returns.
import { X509Certificate } from 'node:crypto';
import type { RuleWithOperations } from '../admission/webhook.js';
import { setCondition, type Condition } from '../core/conditions.js';
import type { CompiledPolicy } from './compile.js';
import type { Compiled } from './engine.js';
import type { AdmissionPolicy } from './types.js';

/** One policy webhook entry as the API server holds it (watched). */
export interface ObservedWebhook {
  rules?: readonly Partial<RuleWithOperations>[];
  clientConfig?: { caBundle?: string };
}

/** Both configurations of the policy webhook as last seen; undefined: not seen (yet). */
export interface Observed {
  validating?: ObservedWebhook;
  mutating?: ObservedWebhook;
}

const has = (list: readonly string[] | undefined, v: string) =>
  !!list && (list.includes('*') || list.includes(v));

/**
 * Whether the API server sends annex every request `wanted` matches, judged from the
 * rules it holds: each operation × group × version × resource of each wanted rule is
 * matched by one observed rule of a scope that includes the wanted one.
 */
export function rulesCover(
  observed: readonly Partial<RuleWithOperations>[] | undefined,
  wanted: readonly RuleWithOperations[],
): boolean {
  const rules = observed ?? [];
  return wanted.every((w) =>
    w.operations.every((op) =>
      w.apiGroups.every((g) =>
        w.apiVersions.every((v) =>
          w.resources.every((r) =>
            rules.some(
              (o) =>
                has(o.operations, op) &&
                has(o.apiGroups, g) &&
                has(o.apiVersions, v) &&
                has(o.resources, r) &&
                ((o.scope ?? '*') === '*' || o.scope === (w.scope ?? '*')),
            ),
          ),
        ),
      ),
    ),
  );
}

/** Whether one of the CAs in `caBundle` (base64 of PEM, as in clientConfig) signed `certPem`. */
export function caBundleVerifies(caBundle: string | undefined, certPem: string): boolean {
  if (!caBundle || !certPem) return false;
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(certPem);
  } catch {
    return false;
  }
  const pem = Buffer.from(caBundle, 'base64').toString('utf8');
  for (const block of pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ??
    []) {
    try {
      const ca = new X509Certificate(block);
      if (leaf.checkIssued(ca) && leaf.verify(ca.publicKey)) return true;
    } catch {
      // Not a certificate this runtime reads: it cannot be the one that verifies.
    }
  }
  return false;
}

export interface Enforcement {
  status: Condition['status'];
  reason: string;
  message: string;
}

/** `Enforced` for a policy left to annex's webhook, from the configurations as observed. */
export function webhookEnforcement(
  p: CompiledPolicy,
  observed: Observed,
  servingCert: string,
  configuration: string,
): Enforcement {
  const needs: ['validating' | 'mutating', string][] = [];
  if (p.validate.length) needs.push(['validating', 'ValidatingWebhookConfiguration']);
  if (p.mutate.length) needs.push(['mutating', 'MutatingWebhookConfiguration']);
  for (const [which, kind] of needs) {
    const w = observed[which];
    if (!w)
      return {
        status: 'False',
        reason: 'WebhookNotRegistered',
        message: `${kind} ${configuration} has no policy webhook in the API server yet`,
      };
    if (!rulesCover(w.rules, p.rules))
      return {
        status: 'False',
        reason: 'RulesPending',
        message: `${kind} ${configuration} does not yet send annex every request the policy matches`,
      };
    if (!caBundleVerifies(w.clientConfig?.caBundle, servingCert))
      return {
        status: 'False',
        reason: 'CABundleMismatch',
        message: `${kind} ${configuration}'s caBundle does not verify annex's serving certificate: the API server cannot call annex`,
      };
  }
  return {
    status: 'True',
    reason: 'WebhookRegistered',
    message: `the API server sends annex's webhook every request the policy matches (${configuration})`,
  };
}

/** The printer columns' text: what a failing rule does, and the kinds matched. */
export function summary(source: AdmissionPolicy): { actions: string; kinds: string } {
  const spec = source.spec;
  const actions = spec.validate?.length ? (spec.actions ?? ['Deny']).join(',') : '';
  const mutates = spec.mutate?.length ? 'Mutate' : '';
  return {
    actions: [actions, mutates].filter(Boolean).join(',') || '-',
    kinds: [
      ...(spec.match?.kinds ?? []),
      ...(spec.match?.resources ?? []).flatMap((r) => r.resources),
    ].join(','),
  };
}

export type PolicyStatus = NonNullable<AdmissionPolicy['status']>;

/** A status as compared for "nothing to write": transition times aside. */
export const statusKey = (s: PolicyStatus) =>
  JSON.stringify({
    ...s,
    conditions: (s.conditions ?? []).map(({ lastTransitionTime: _, ...rest }) => rest),
  });

/**
 * The status `obj` should hold: `Ready` from its compile result `c`, `Enforced` as
 * judged (`enforced`), who enforces it (`enforcedBy`) and the printer columns.
 */
export function policyStatus(
  obj: AdmissionPolicy,
  c: Compiled,
  enforced: Enforcement,
  enforcedBy: Pick<PolicyStatus, 'enforcedBy' | 'webhookReason'>,
  now: Date,
): PolicyStatus {
  const generation = obj.metadata.generation;
  const gen = generation !== undefined ? { observedGeneration: generation } : {};
  const conditions = [
    c.error
      ? {
          type: 'Ready',
          status: 'False' as const,
          reason: 'CompileError',
          message: c.error,
          ...gen,
        }
      : {
          type: 'Ready',
          status: 'True' as const,
          reason: 'Compiled',
          message: 'the policy compiled',
          ...gen,
        },
    { type: 'Enforced', ...enforced, ...gen },
  ];
  return {
    ready: !c.error,
    ...(c.error ? { error: c.error } : {}),
    ...gen,
    ...enforcedBy,
    ...summary(obj),
    conditions: conditions
      .reduce((all, next) => setCondition(all, next, now), obj.status?.conditions ?? [])
      .filter((x) => x.type === 'Ready' || x.type === 'Enforced'),
  };
}
