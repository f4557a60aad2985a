// The policy webhooks: admission glue between a review and the pure engine (decide,
// mutateWith) over the policies the shared state holds, and the webhook that refuses an
// AdmissionPolicy that does not compile. No watches, no writes: the controller keeps
// the state current, and the webhooks' `rules` are read from it.
import type { AdmissionRequest } from '../admission/review.js';
import { allow, deny } from '../admission/verdict.js';
import {
  validatingWebhook,
  type ReviewContext,
  type RuleWithOperations,
  type Webhook,
} from '../admission/webhook.js';
import type { CompiledPolicy } from './compile.js';
import { compilePolicy } from './compile.js';
import { decide, mutateWith } from './engine.js';
import type { EvaluateContext } from './evaluate.js';
import type { PolicyState } from './state.js';
import { POLICY_GROUP, POLICY_PLURAL, PolicyCompileError, type PolicyDecision } from './types.js';

export const POLICY_WEBHOOK = 'policies.annex.dev';
export const POLICY_CONFIGURATION = 'annex-policies';

/**
 * One policy webhook's registration. Its `rules` read the state: the union of what the
 * webhook-side policies match (none until one is ready), so the registrar renders what the
 * controller last planned and nothing writes to the declaration.
 */
const registration = (state: PolicyState, extra: object = {}) => ({
  name: POLICY_WEBHOOK,
  get rules(): RuleWithOperations[] {
    return [...state.rules];
  },
  failurePolicy: 'Fail' as const,
  // Decisions become Events, which a dry run must not write.
  sideEffects: 'NoneOnDryRun' as const,
  timeoutSeconds: 5,
  ...extra,
});

const selectsNamespaces = (p: CompiledPolicy) =>
  !!(p.match.namespaceSelector || p.exclude?.namespaceSelector);

export interface PolicyWebhooks {
  /** Deny, Warn and Audit: the policies' validate rules. */
  validating: Webhook;
  /** The policies' mutate rules. */
  mutating: Webhook;
  /** Refuses an AdmissionPolicy that does not compile. */
  check: Webhook;
}

export interface WebhookOptions {
  annexNamespace: string;
  /** Records an authenticated review's Deny/Warn/Audit/Exempt decisions (log and Events). */
  record(decisions: PolicyDecision[], req: AdmissionRequest): void;
}

export function policyWebhooks(state: PolicyState, opts: WebhookOptions): PolicyWebhooks {
  /**
   * The request's namespace labels from the watch. One it has not delivered yet (just
   * created, or the watch is behind) is read from the API server when a policy's selector
   * needs it, as the API server's own namespace matcher does; if that read fails, the
   * review fails, and the webhook's failurePolicy (Fail) refuses the request rather than
   * match it against no labels. The review's deadline bounds the evaluation.
   */
  const matchCtx = async (
    req: AdmissionRequest,
    review: ReviewContext,
  ): Promise<EvaluateContext> => {
    const ctx: EvaluateContext = {
      annexNamespace: opts.annexNamespace,
      deadline: review.deadline,
      pace: { slowestRuleMs: 0 },
      exceptions: state.exceptions,
    };
    if (!req.namespace) return ctx;
    let labels = state.namespaceLabels.get(req.namespace);
    const kube = state.kube;
    if (!labels && kube && state.onWebhook.some(selectsNamespaces)) {
      const ns = await kube.get<{ metadata?: { labels?: Record<string, string> } }>(
        `/api/v1/namespaces/${encodeURIComponent(req.namespace)}`,
      );
      labels = ns.metadata?.labels ?? {};
    }
    return labels ? { ...ctx, namespaceLabels: labels } : ctx;
  };

  const validating: Webhook = {
    name: 'policies',
    type: 'validating',
    configuration: POLICY_CONFIGURATION,
    description:
      "annex's AdmissionPolicies (policy.annex.dev): Deny, Warn and Audit. annex keeps `rules` equal to what the policies match.",
    registrations: [registration(state)],
    admit: async (req, review) => {
      const { verdict, decisions } = decide(state.onWebhook, req, await matchCtx(req, review));
      // Only the API server's reviews: anyone else could forge the userInfo and the object.
      if (review.authenticated) opts.record(decisions, req);
      return verdict;
    },
  };
  const mutating: Webhook = {
    name: 'policies',
    type: 'mutating',
    configuration: POLICY_CONFIGURATION,
    description:
      "annex's AdmissionPolicies (policy.annex.dev): mutate rules. annex keeps `rules` equal to what the policies match.",
    registrations: [registration(state, { reinvocationPolicy: 'Never' })],
    admit: async (req, review) => mutateWith(state.onWebhook, req, await matchCtx(req, review)),
  };
  const check = validatingWebhook({
    name: 'admissionpolicies.annex.dev',
    description: 'Refuses an AdmissionPolicy that does not compile, naming the rule and the fault.',
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [POLICY_GROUP],
        apiVersions: ['*'],
        resources: [POLICY_PLURAL],
        scope: 'Cluster',
      },
    ],
    failurePolicy: 'Fail',
    admit: (req) => {
      try {
        compilePolicy(req.object);
        return allow();
      } catch (e) {
        if (e instanceof PolicyCompileError) return deny(e.message, 422);
        throw e;
      }
    },
  });
  return { validating, mutating, check };
}
