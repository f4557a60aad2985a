// A policy's CEL parts evaluated as a ValidatingAdmissionPolicy evaluates them: the
// bindings (object, oldObject, request, namespaceObject, variables), matchConditions
// (all must be true; any false skips the policy even if another errored; otherwise an
// error is the policy's failure), and each validation's verdict and message, with VAP's
// fallbacks (messageExpression → message → `failed expression: <text>`).
import { isCelError } from '@bufbuild/cel';
import type { AdmissionRequest } from '../../admission/review.js';
import type { MatchContext } from '../match.js';
import { errorText, type CompiledExpression } from './rule.js';
import { toCel, type CelCache } from './values.js';

export interface NamedExpression {
  name: string;
  expression: CompiledExpression;
}

export interface CelRule {
  name: string;
  expression: CompiledExpression;
  message: string | undefined;
  messageExpression: CompiledExpression | undefined;
  /** VAP's reason: what the API server answers with; annex's webhook folds every cause into one 422. */
  reason: string;
}

/** An expression's evaluation error, worded as the API server words it. */
export class CelEvalError extends Error {}

function failed(e: CompiledExpression, r: unknown): CelEvalError {
  const text = errorText(r);
  return new CelEvalError(`expression '${e.text}' resulted in error: ${text}`, { cause: text });
}

/** The bindings of one request, with `object` the (possibly mutated) object validated. */
export class CelActivation {
  private readonly bindings: Record<string, unknown>;
  /** The error text of each variable that failed (cel-go's words, without the expression). */
  private readonly varErrors = new Map<string, string>();

  constructor(
    req: AdmissionRequest,
    object: unknown,
    ctx: MatchContext,
    variables: readonly NamedExpression[],
    /** Shared by the activations of one evaluation: each part of the objects converted once. */
    cache: CelCache = new WeakMap(),
  ) {
    // VAP's `request` carries neither object: they are their own variables.
    const request: Record<string, unknown> = { ...req };
    delete request.object;
    delete request.oldObject;
    // annex knows the namespace's labels only (MatchContext): namespaceObject carries them.
    const ns = req.namespace
      ? {
          apiVersion: 'v1',
          kind: 'Namespace',
          metadata: {
            name: req.namespace,
            labels: ctx.namespaceLabels ?? { 'kubernetes.io/metadata.name': req.namespace },
          },
        }
      : null;
    const vars = new Map<string, unknown>();
    this.bindings = {
      object: toCel(object ?? null, cache),
      oldObject: toCel(req.oldObject ?? null, cache),
      request: toCel(request, cache),
      namespaceObject: toCel(ns, cache),
      variables: vars,
    };
    // In order: a variable may read the ones before it.
    for (const v of variables) {
      try {
        vars.set(v.name, this.value(v.expression));
      } catch (e) {
        this.varErrors.set(v.name, (e as CelEvalError).cause as string);
      }
    }
  }

  /** The value of `e`; throws CelEvalError when it (or a variable it reads) fails. */
  value(e: CompiledExpression): unknown {
    for (const name of e.reads) {
      const err = this.varErrors.get(name);
      // The API server names the variable, and fails the expression that read it.
      if (err !== undefined)
        throw failed(e, `composited variable "${name}" fails to evaluate: ${err}`);
    }
    const r = e.run(this.bindings);
    if (isCelError(r) || r instanceof Error) throw failed(e, r);
    return r;
  }

  bool(e: CompiledExpression): boolean {
    const r = this.value(e);
    if (typeof r !== 'boolean') throw failed(e, `expected a bool, got ${typeof r}`);
    return r;
  }
}

/** Whether the policy applies: false when any condition is false; throws when none is but one errored. */
export function conditionsHold(conds: readonly NamedExpression[], act: CelActivation): boolean {
  let error: unknown;
  for (const c of conds) {
    try {
      if (!act.bool(c.expression)) return false;
    } catch (e) {
      error ??= e;
    }
  }
  if (error) throw error;
  return true;
}

/** The longest message VAP takes from messageExpression (celconfig.MaxEvaluatedMessageExpressionSizeBytes). */
const MAX_MESSAGE_BYTES = 5 * 1024;

/** What VAP takes from messageExpression (validator.go): a string, trimmed, not blank, one line, not too long. */
function usable(m: unknown): string | undefined {
  if (typeof m !== 'string') return undefined;
  const t = m.trim();
  if (!t || t.includes('\n') || Buffer.byteLength(t) > MAX_MESSAGE_BYTES) return undefined;
  return t;
}

/** The message of a failed rule, or undefined when it holds; throws CelEvalError. */
export function ruleMessage(rule: CelRule, act: CelActivation): string | undefined {
  if (act.bool(rule.expression)) return undefined;
  if (rule.messageExpression) {
    try {
      const m = usable(act.value(rule.messageExpression));
      if (m !== undefined) return m;
    } catch {
      // VAP falls back to message (and warns); so does annex.
    }
  }
  // VAP trims both fallbacks; a blank message falls through to the expression.
  return rule.message?.trim() || `failed expression: ${rule.expression.text.trim()}`;
}
