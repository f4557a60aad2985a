// What the API server answers with a set of AdmissionPolicies installed the way annex
// installs them: with policy.native (the default) each policy that compiles to CEL is
// enforced by the API server itself as a Mutating/ValidatingAdmissionPolicy, the rest by
// annex's webhooks. Pure, like evaluate.ts, whose verdicts it reuses: only the envelope
// differs, and kube-apiserver's admission order (pkg/kubeapiserver/options/plugins.go:
// MutatingAdmissionPolicy, MutatingAdmissionWebhook, ValidatingAdmissionPolicy,
// ValidatingAdmissionWebhook) decides what is seen: a VAP's denial stops the request
// before annex's validating webhook is called.
import { goQuote } from '../admission/names/index.js';
import type { AdmissionRequest } from '../admission/review.js';
import type { FieldCause } from '../admission/verdict.js';
import { qualifiedResource, StatusError, type Status, type StatusReason } from '../core/status.js';
import { bindingName, celObjects, recordsAudit, vapName, type CelOptions } from './cel/index.js';
import type { CompiledPolicy } from './compile.js';
import { evaluate, type EvaluateContext } from './evaluate.js';
import { liveExceptions } from './exceptions/match.js';
import type { Evaluation } from './types.js';

export interface InstalledOptions extends CelOptions {
  /** policy.native: hand the policies CEL can express to the API server (default true). */
  native?: boolean;
}

export interface InstalledEvaluation extends Evaluation {
  /**
   * When several ValidatingAdmissionPolicies deny, the API server reports the first it
   * evaluated, in no fixed order (a Go map's): `status` names the first in policy order,
   * these the other policies it may name instead.
   */
  otherDenials: string[];
  /** `status` is a ValidatingAdmissionPolicy's refusal (not annex's webhook's). */
  vapDenied?: boolean;
}

/** The VAP's messageExpression (cel/compile.ts): one cause as it is, several as `[a, b]`. */
function vapMessage(causes: readonly FieldCause[]): string {
  const rendered = causes.map((c) => `${c.field}: ${c.message}`);
  return rendered.length === 1 ? rendered[0]! : `[${rendered.join(', ')}]`;
}

const REASON_CODES: Record<string, number> = {
  Invalid: 422,
  Forbidden: 403,
  Unauthorized: 401,
  RequestEntityTooLarge: 413,
};

/**
 * A CEL policy's VAP (its rules verbatim): the API server reports the first failed
 * validation, its message bare (an evaluation error as cel-go words it), with its reason.
 */
function celDenial(policy: CompiledPolicy, failed: readonly FieldCause[]) {
  const first = failed[0]!;
  const rule = policy.validate.find((r) => r.name === first.field);
  const reason = (rule?.type === 'expression' ? rule.cel.reason : 'Invalid') as StatusReason;
  return {
    message: first.message.replace(/^Internal error: rule "[^"]*": /, ''),
    reason,
  };
}

const isCel = (p: CompiledPolicy) => p.validate.some((r) => r.type === 'expression');

/**
 * The ValidatingAdmissionPolicy plugin's refusal (validating/dispatcher.go): admission's
 * NewForbidden wording, the validation's reason (Invalid, so 422), and the inner message
 * again as the only cause — which kubectl prints after `is invalid: : `.
 */
function vapDenial(
  request: AdmissionRequest,
  policy: string,
  message: string,
  reason: StatusReason = 'Invalid',
): Status {
  return vapRefusal(
    request,
    `ValidatingAdmissionPolicy '${vapName(policy)}' with binding '${bindingName(policy)}' denied request: ${message}`,
    reason,
  );
}

/** The ValidatingAdmissionPolicy plugin's refusal around its `inner` message (any VAP's). */
export function vapRefusal(
  request: AdmissionRequest,
  inner: string,
  reason: StatusReason = 'Invalid',
): Status {
  const { group, resource } = request.resource;
  const name = request.name || 'Unknown';
  return new StatusError(
    REASON_CODES[reason] ?? 422,
    reason,
    `${qualifiedResource(resource, group)} ${goQuote(name)} is forbidden: ${inner}`,
    { name, ...(group ? { group } : {}), kind: resource, causes: [{ message: inner }] },
  ).status;
}

/** Evaluate `policies` on `request` as the API server does with them installed. */
export function evaluateAsInstalled(
  policies: readonly CompiledPolicy[],
  request: AdmissionRequest,
  opts: InstalledOptions = {},
  ctx: EvaluateContext = {},
): InstalledEvaluation {
  const { native = true, ...celOpts } = opts;
  const compiled = native
    ? celObjects(
        policies.filter((p) => !recordsAudit(p) && !liveExceptions(ctx.exceptions, p).length),
        celOpts,
      )
    : new Map();
  const apiServer = policies.filter((p) => compiled.has(p.name));
  const webhook = policies.filter((p) => !compiled.has(p.name));
  // Every mutation (the API server's, then the webhook's) before any validation: the
  // chain's order, so one evaluation gives the final object and every policy's causes.
  const all = evaluate([...apiServer, ...webhook], request, ctx);
  const base = {
    ...(all.mutated ? { mutated: all.mutated } : {}),
    decisions: all.decisions,
    ...(all.matched ? { matched: all.matched } : {}),
    ...(all.ignored ? { ignored: all.ignored } : {}),
    ...(all.exempted ? { exempted: all.exempted } : {}),
  };

  const causes = new Map<string, FieldCause[]>();
  for (const d of all.decisions)
    causes.set(d.policy, [...(causes.get(d.policy) ?? []), ...d.causes]);
  const warnings: string[] = [];
  const denials: string[] = [];
  for (const p of apiServer) {
    const failed = causes.get(p.name);
    if (!failed) continue;
    if (p.actions.includes('Deny')) denials.push(p.name);
    if (p.actions.includes('Warn')) {
      const text = isCel(p) ? celDenial(p, failed).message : vapMessage(failed);
      warnings.push(
        `Validation failed for ValidatingAdmissionPolicy '${vapName(p.name)}' with binding '${bindingName(p.name)}': ${text}`,
      );
    }
  }
  const [first, ...otherDenials] = denials;
  if (first !== undefined) {
    const p = apiServer.find((x) => x.name === first)!;
    const failed = causes.get(first)!;
    const status = isCel(p)
      ? vapDenial(request, first, celDenial(p, failed).message, celDenial(p, failed).reason)
      : vapDenial(request, first, vapMessage(failed));
    return { ...base, allowed: false, status, warnings, otherDenials, vapDenied: true };
  }
  // Only now is annex's validating webhook called, with the mutated object.
  const hook = evaluate(webhook, all.mutated ? { ...request, object: all.mutated } : request, ctx);
  return {
    ...base,
    allowed: hook.allowed,
    ...(hook.status ? { status: hook.status } : {}),
    warnings: [...warnings, ...hook.warnings],
    otherDenials: [],
  };
}
