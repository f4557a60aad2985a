// The pure centre of the policy feature: (compiled policies, admission request, context)
// → one Evaluation. No Koa, no kube, no I/O: the live webhook, `annex check` and the
// benchmark all call this same function.
//
// Order, as the API server's admission chain: every matching policy's mutate rules run
// first (in the order the policies are given), then every matching policy validates the
// mutated object. A failing rule's causes go where the policy's actions send them: Deny
// into one 422 Invalid Status (kubectl prints it as built-in validation), Warn into
// warnings (`<policy>: <field>: <message>`), Audit only into the decisions, which every
// failing rule yields whatever its actions. What the answer quotes is bounded (bounds.ts).
//
// Mutations are copy-on-write: `mutated` shares every object it did not change with the
// request's object (which is never modified), so a 10 KB object is not cloned per policy.
// Treat both as read-only.
import { isDeepStrictEqual } from 'node:util';
import { defaultPodTemplateSpec } from '../admission/defaults/index.js';
import { fieldErrorBody, validateName } from '../admission/names/index.js';
import type { AdmissionRequest } from '../admission/review.js';
import { denyInvalid, invalidField, type FieldCause } from '../admission/verdict.js';
import type { KubeObject } from '../core/types.js';
import { boundCauses, boundWarnings, quoter, type Quote } from './bounds.js';
import type { CompiledMutateRule, CompiledPolicy, CompiledValidateRule } from './compile.js';
import { matchesWithin, RULE_COST_BUDGET } from './cost.js';
import { CelActivation, conditionsHold, ruleMessage } from './expr/evaluate.js';
import type { CelCache } from './expr/values.js';
import { policyMatches, type MatchContext } from './match.js';
import {
  fieldOfPath,
  isRecord,
  renderField,
  walkPointer,
  type DescentCache,
  type PathMatch,
} from './paths.js';
import { evaluatePodSecurity, podOf, podSecurityMessage } from './pss/index.js';
import type { ExceptionSet } from './exceptions/match.js';
import type { Exemption } from './exceptions/types.js';
import type { Evaluation, PolicyAction, PolicyDecision } from './types.js';

export type EvaluateContext = MatchContext & {
  /**
   * When the answer is due (performance.now() ms): the webhook's budget from ?timeout=.
   * Rules not started by then are not evaluated but fail, as a rule that cannot be
   * evaluated does: its policy's failurePolicy decides (Fail: one error cause for the
   * policy's rules left; Ignore: skipped), so the answer goes out within the API server's
   * deadline.
   */
  deadline?: number;
  /**
   * The longest a rule has taken in this review so far (ms), shared by the evaluations of
   * one review: a rule is not started when it would likely end past the deadline. It
   * grows with the rules' cost and with the machine's load, so the stop scales with both.
   */
  pace?: { slowestRuleMs: number };
  /**
   * What evaluating converted and indexed, by object (evaluationCaches()): shared by the
   * evaluations of one review, whose objects none of them modifies (engine.ts evaluates
   * each policy alone). Without it, each evaluate() call has its own.
   */
  caches?: EvaluationCaches;
  /**
   * The PolicyExceptions known: a validate rule an exception exempts the request from is
   * not evaluated, and named in `exempted`.
   */
  exceptions?: ExceptionSet;
};

/** The objects of one review as CEL values, and the descent indexes of its paths. */
export interface EvaluationCaches {
  cel: CelCache;
  descents: DescentCache;
}

export const evaluationCaches = (): EvaluationCaches => ({
  cel: new WeakMap(),
  descents: new WeakMap(),
});

/** What a rule reports that the budget left no time for. */
export const OUT_OF_TIME = 'not evaluated: the evaluation ran out of its time budget (?timeout=)';

/** Whether a value counts as set: `required` wants one, `forbidden` none (Go's unset: null, ""). */
const present = (v: unknown) => v !== null && v !== undefined && v !== '';

function schemaCauses(
  rule: Extract<CompiledValidateRule, { type: 'schema' }>,
  m: PathMatch,
  quote: Quote,
): FieldCause[] {
  if (rule.validate(m.value)) return [];
  const e = rule.validate.errors?.[0];
  // ajv's instancePath (`/resources/requests`) continues the match's field path.
  const at = walkPointer(m.value, e?.instancePath ?? '');
  if (e?.keyword === 'required') {
    const missing = (e.params as { missingProperty: string }).missingProperty;
    return [
      {
        field: renderField([...m.segments, ...at.segments, missing]),
        message: fieldErrorBody('Required value', undefined, rule.message ?? ''),
      },
    ];
  }
  const allowed = (e?.params as { allowedValues?: unknown[] } | undefined)?.allowedValues;
  const detail =
    rule.message ??
    `${e?.message ?? 'does not match the schema'}${allowed ? `: ${allowed.map((a) => JSON.stringify(a)).join(', ')}` : ''}`;
  return [invalidField(renderField([...m.segments, ...at.segments]), quote(at.value), detail)];
}

function nameCauses(
  rule: Extract<CompiledValidateRule, { type: 'nameRule' }>,
  m: PathMatch,
  quote: Quote,
): FieldCause[] {
  const shown = quote(m.value);
  if (typeof m.value !== 'string') {
    return [invalidField(m.field, shown, rule.message ?? 'must be a string')];
  }
  const details = validateName(rule.nameRule, m.value);
  if (details.length === 0) return [];
  if (rule.message !== undefined) return [invalidField(m.field, shown, rule.message)];
  return details.map((d) => invalidField(m.field, shown, d));
}

/** The Pod Security Standards on the object's pod: one Forbidden cause with PodSecurity's text. */
function podSecurityCauses(
  rule: Extract<CompiledValidateRule, { type: 'podSecurity' }>,
  obj: object,
): FieldCause[] {
  const pod = podOf(obj);
  if (!pod) return [];
  const violations = evaluatePodSecurity(rule.level, rule.version, pod.meta, pod.spec);
  if (!violations.length) return [];
  const text = rule.message ?? podSecurityMessage(rule.level, rule.version, violations);
  return [{ field: pod.field, message: fieldErrorBody('Forbidden', undefined, text) }];
}

/** The causes of one rule on `obj`; throws when the path cannot be evaluated on it. */
function validateRule(
  rule: CompiledValidateRule,
  obj: object,
  quote: Quote,
  descents: DescentCache,
): FieldCause[] {
  if (rule.type === 'podSecurity') return podSecurityCauses(rule, obj);
  const matches = matchesWithin(rule.path, obj, RULE_COST_BUDGET, descents);
  switch (rule.type) {
    case 'required':
      return matches.some((m) => present(m.value))
        ? []
        : [
            {
              field: fieldOfPath(rule.path),
              message: fieldErrorBody('Required value', undefined, rule.message ?? ''),
            },
          ];
    case 'forbidden':
      return matches
        .filter((m) => present(m.value))
        .map((m) => ({
          field: m.field,
          message: fieldErrorBody('Forbidden', m.value, rule.message ?? ''),
        }));
    case 'nameRule':
      return matches.flatMap((m) => nameCauses(rule, m, quote));
    case 'schema':
      return matches.flatMap((m) => schemaCauses(rule, m, quote));
    case 'expression':
      throw new Error('a CEL rule is evaluated by celCauses');
  }
}

/** A CEL rule's cause: its field is the rule's name (a CEL rule has no one path). */
function celCauses(
  rule: Extract<CompiledValidateRule, { type: 'expression' }>,
  act: CelActivation,
): FieldCause[] {
  const message = ruleMessage(rule.cel, act);
  return message === undefined ? [] : [{ field: rule.name, message }];
}

/**
 * `target` with the fields of `defaults` it lacks (recursively into objects), as a new
 * object sharing what did not change; undefined when nothing was absent.
 */
function withAbsent(
  target: Record<string, unknown>,
  defaults: Record<string, unknown>,
): Record<string, unknown> | undefined {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(defaults)) {
    const cur = target[k];
    if (cur === undefined || cur === null) {
      out ??= { ...target };
      out[k] = structuredClone(v);
    } else if (isRecord(cur) && isRecord(v)) {
      const sub = withAbsent(cur, v);
      if (sub) {
        out ??= { ...target };
        out[k] = sub;
      }
    }
  }
  return out;
}

type Container = Record<string | number, unknown>;

/** The value at `segments` in `root`. */
function valueAt(root: unknown, segments: readonly (string | number)[]): unknown {
  return segments.reduce<unknown>((v, k) => (v as Container | undefined)?.[k], root);
}

/** `root` with `value` at `segments`: the objects on the way are copied, the rest shared. */
function replaceAt(root: unknown, segments: readonly (string | number)[], value: unknown): unknown {
  if (segments.length === 0) return value;
  const [k, ...rest] = segments as [string | number, ...(string | number)[]];
  const copy = (Array.isArray(root) ? [...root] : { ...(root as object) }) as Container;
  copy[k] = replaceAt(copy[k], rest, value);
  return copy;
}

/**
 * One mutate rule on `root`, copy-on-write: the result shares every object it did not
 * change with `root`, which is never modified. Returns `root` itself when nothing changed.
 */
function mutateRule(
  rule: CompiledMutateRule,
  root: KubeObject,
  descents: DescentCache,
): KubeObject {
  const matches = matchesWithin(rule.path, root, RULE_COST_BUDGET, descents);
  const bad = matches.find((m) => !isRecord(m.value));
  if (bad) throw new Error(`${bad.field || 'the object'} is not an object`);
  let out = root;
  for (const m of matches) {
    // Read again from `out`: an earlier match may have replaced an ancestor.
    const before = valueAt(out, m.segments) as Record<string, unknown>;
    let after = before;
    if (rule.podTemplateDefaults) {
      const defaulted = defaultPodTemplateSpec(after);
      if (!isDeepStrictEqual(defaulted, after)) after = defaulted;
    }
    if (rule.setIfAbsent) after = withAbsent(after, rule.setIfAbsent) ?? after;
    if (after !== before) out = replaceAt(out, m.segments, after) as KubeObject;
  }
  return out;
}

/** field.InternalError: what a rule that cannot be evaluated on this object reports. */
function internalError(rule: { name: string; path: string }, e: unknown): FieldCause {
  const msg = e instanceof Error ? e.message : String(e);
  return {
    field: fieldOfPath(rule.path),
    message: fieldErrorBody('Internal error', undefined, `rule "${rule.name}": ${msg}`),
  };
}

const STRENGTH: PolicyAction[] = ['Deny', 'Warn', 'Audit'];

/** Evaluate every policy matching `request`; see the file comment for the order and the folding. */
export function evaluate(
  policies: readonly CompiledPolicy[],
  request: AdmissionRequest,
  ctx: EvaluateContext = {},
): Evaluation {
  const failures: { policy: CompiledPolicy; rule: string; causes: FieldCause[] }[] = [];
  const ignored: NonNullable<Evaluation['ignored']> = [];
  const exempted: Exemption[] = [];
  // The objects as CEL values, converted lazily and shared by every policy's activation;
  // their descent indexes, shared by every path that descends into the same one.
  const { cel: celCache, descents } = ctx.caches ?? evaluationCaches();
  const fail = (policy: CompiledPolicy, rule: { name: string; path: string }, e: unknown) => {
    const failure = { rule: rule.name, causes: [internalError(rule, e)] };
    if (policy.failurePolicy === 'Fail') failures.push({ policy, ...failure });
    else ignored.push({ policy: policy.name, ...failure });
  };
  /** VAP's matchConditions, on the request's object: false skips the policy; an error fails it. */
  const conditionsMet = (p: CompiledPolicy) => {
    if (!p.matchConditions.length) return true;
    try {
      return conditionsHold(
        p.matchConditions,
        new CelActivation(request, request.object, ctx, [], celCache),
      );
    } catch (e) {
      fail(p, { name: 'matchConditions', path: '$' }, e);
      return false;
    }
  };
  const matching = policies.filter((p) => policyMatches(p, request, ctx) && conditionsMet(p));
  const deadline = ctx.deadline;
  const pace = ctx.pace ?? { slowestRuleMs: 0 };
  const late = () => deadline !== undefined && performance.now() + pace.slowestRuleMs > deadline;
  /**
   * The first rule of `rules` left without time fails for them all: one cause, not one per
   * rule, so that answering stays cheap however many rules are left.
   */
  const outOfTime = (policy: CompiledPolicy, rules: readonly { name: string; path: string }[]) => {
    const rest = rules.length - 1;
    const more =
      rest === 0
        ? ''
        : rest === 1
          ? '; nor was the rule after it'
          : `; nor were the ${rest} rules after it`;
    fail(policy, rules[0]!, new Error(`${OUT_OF_TIME}${more}`));
  };
  /** Runs one rule, noting how long it took. */
  const timed = <T>(rule: () => T): T => {
    const t0 = performance.now();
    try {
      return rule();
    } finally {
      pace.slowestRuleMs = Math.max(pace.slowestRuleMs, performance.now() - t0);
    }
  };

  // Mutation, copy-on-write: the request's object is never changed.
  const original = request.object ?? undefined;
  let object = original;
  if (object) {
    for (const policy of matching) {
      for (const [i, rule] of policy.mutate.entries()) {
        if (late()) {
          outOfTime(policy, policy.mutate.slice(i));
          break;
        }
        try {
          object = timed(() => mutateRule(rule, object!, descents));
        } catch (e) {
          fail(policy, rule, e);
        }
      }
    }
  }
  const mutated = object !== original;

  // Validation: of the (mutated) object; a DELETE has only the old one.
  const target = object ?? request.oldObject ?? undefined;
  const quote = quoter();
  if (target) {
    for (const policy of matching) {
      // Built once per policy, on its first CEL rule: its variables are evaluated then.
      let act: CelActivation | undefined;
      const activation = () =>
        (act ??= new CelActivation(request, object ?? null, ctx, policy.variables, celCache));
      for (const [i, rule] of policy.validate.entries()) {
        const exception = ctx.exceptions?.exemption(policy, rule.name, request);
        if (exception) {
          exempted.push({ policy: policy.name, rule: rule.name, exception });
          continue;
        }
        if (late()) {
          outOfTime(policy, policy.validate.slice(i));
          break;
        }
        try {
          const causes = timed(() =>
            rule.type === 'expression'
              ? celCauses(rule, activation())
              : validateRule(rule, target, quote, descents),
          );
          if (causes.length) failures.push({ policy, rule: rule.name, causes });
        } catch (e) {
          fail(policy, rule, e);
        }
      }
    }
  }

  const denyCauses: FieldCause[] = [];
  const warnings: string[] = [];
  const decisions: PolicyDecision[] = [];
  for (const { policy, rule, causes } of failures) {
    const action = STRENGTH.find((a) => policy.actions.includes(a)) ?? 'Deny';
    decisions.push({ policy: policy.name, rule, action, causes });
    if (policy.actions.includes('Deny')) denyCauses.push(...causes);
    if (policy.actions.includes('Warn')) {
      for (const c of causes) {
        warnings.push(`${policy.name}: ${c.field ? `${c.field}: ` : ''}${c.message}`);
      }
    }
  }
  const verdict = denyCauses.length ? denyInvalid(request, boundCauses(denyCauses)) : undefined;
  return {
    allowed: !verdict,
    ...(verdict && !verdict.allowed ? { status: verdict.status } : {}),
    warnings: boundWarnings(warnings),
    ...(mutated && object ? { mutated: object } : {}),
    decisions,
    matched: matching.map((p) => p.name),
    ...(ignored.length ? { ignored } : {}),
    ...(exempted.length ? { exempted } : {}),
  };
}
