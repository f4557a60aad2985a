// The policy engine as the webhooks use it, with no Kubernetes client: the compiled set
// (compiled once per generation), the union of its rules, and the two answers — the
// validating fold of every matching policy and the mutating chain. webhooks.ts answers
// reviews with it; `annex check` and the benchmarks use compile/evaluate beneath it.
import type { AdmissionRequest } from '../admission/review.js';
import { allow, denyInvalid, mutate, type Verdict } from '../admission/verdict.js';
import type { RuleWithOperations } from '../admission/webhook.js';
import { boundCauses, boundWarnings } from './bounds.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { observeEvaluation } from './decision-log.js';
import { evaluate, evaluationCaches, type EvaluateContext } from './evaluate.js';
import { policyMatches } from './match.js';
import { PolicyCompileError, type AdmissionPolicy, type PolicyDecision } from './types.js';

/** One rule per operations/groups/versions/scope, resources merged: the API server's view of the union. */
export function unionRules(rules: readonly RuleWithOperations[]): RuleWithOperations[] {
  const byKey = new Map<string, RuleWithOperations>();
  for (const r of rules) {
    const head = {
      operations: [...new Set(r.operations)].sort(),
      apiGroups: [...new Set(r.apiGroups)].sort(),
      apiVersions: [...new Set(r.apiVersions)].sort(),
      scope: r.scope ?? '*',
    };
    const key = JSON.stringify(head);
    const into = byKey.get(key) ?? { ...head, resources: [] };
    into.resources = [...new Set([...into.resources, ...r.resources])].sort();
    byKey.set(key, into);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, r]) => r);
}

/** The same rules whatever the API server defaulted (scope) or reordered. */
export const sameRules = (a: unknown, b: readonly RuleWithOperations[]) =>
  JSON.stringify(unionRules(Array.isArray(a) ? (a as RuleWithOperations[]) : [])) ===
  JSON.stringify(b);

export interface Compiled {
  generation: number | undefined;
  uid: string | undefined;
  policy?: CompiledPolicy;
  error?: string;
}

/** The compiled set, by name; a policy is compiled again only when its generation moves. */
export class PolicySet {
  private readonly byName = new Map<string, Compiled>();
  private sorted: CompiledPolicy[] = [];

  /** Compiles (or reuses) one policy; returns its compile result. */
  put(obj: AdmissionPolicy): Compiled {
    const name = obj.metadata?.name ?? '';
    const known = this.byName.get(name);
    if (known && known.generation === obj.metadata.generation && known.uid === obj.metadata.uid) {
      return known;
    }
    let entry: Compiled;
    try {
      entry = {
        generation: obj.metadata.generation,
        uid: obj.metadata.uid,
        policy: compilePolicy(obj),
      };
    } catch (e) {
      if (!(e instanceof PolicyCompileError)) throw e;
      entry = { generation: obj.metadata.generation, uid: obj.metadata.uid, error: e.message };
    }
    this.byName.set(name, entry);
    this.resort();
    return entry;
  }

  delete(name: string): void {
    if (this.byName.delete(name)) this.resort();
  }

  /** Exactly these objects (a relist). */
  replace(objs: AdmissionPolicy[]): void {
    const keep = new Set(objs.map((o) => o.metadata.name));
    for (const name of [...this.byName.keys()]) if (!keep.has(name)) this.byName.delete(name);
    for (const o of objs) this.put(o);
    this.resort();
  }

  /** Ready policies, by name. */
  get policies(): readonly CompiledPolicy[] {
    return this.sorted;
  }

  /** What the API server must send annex: the union of the ready policies' rules. */
  rules(): RuleWithOperations[] {
    return unionRules(this.sorted.flatMap((p) => p.rules));
  }

  private resort(): void {
    this.sorted = [...this.byName.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([, c]) => (c.policy ? [c.policy] : []));
  }
}

export interface DecideOutcome {
  verdict: Verdict;
  decisions: PolicyDecision[];
}

/**
 * The validating answer: every policy evaluated alone (for its latency histogram), folded
 * as evaluate() folds a set — decisions and warnings in policy order, every Deny cause in
 * one 422 Invalid Status.
 */
export function decide(
  policies: readonly CompiledPolicy[],
  req: AdmissionRequest,
  ctx: EvaluateContext,
): DecideOutcome {
  const decisions: PolicyDecision[] = [];
  const warnings: string[] = [];
  // One review: the policies share what evaluating converts and indexes of its objects.
  ctx = ctx.caches ? ctx : { ...ctx, caches: evaluationCaches() };
  for (const p of policies) {
    if (!policyMatches(p, req, ctx)) continue;
    const t0 = process.hrtime.bigint();
    const e = evaluate([p], req, ctx);
    observeEvaluation(p.name, Number(process.hrtime.bigint() - t0) / 1e9);
    decisions.push(...e.decisions);
    // Every use of an exception is a decision of its own (recorded, never a cause).
    for (const x of e.exempted ?? []) decisions.push({ ...x, action: 'Exempt', causes: [] });
    warnings.push(...e.warnings);
  }
  const denyCauses = decisions.filter((d) => d.action === 'Deny').flatMap((d) => d.causes);
  // Each evaluation bounded its own; bounded again, as they add up across policies.
  const shown = boundWarnings(warnings);
  if (!denyCauses.length) return { verdict: allow(shown), decisions };
  const v = denyInvalid(req, boundCauses(denyCauses));
  return { verdict: shown.length ? { ...v, warnings: shown } : v, decisions };
}

/** The mutating answer: every matching policy's mutate rules, in order. */
export function mutateWith(
  policies: readonly CompiledPolicy[],
  req: AdmissionRequest,
  ctx: EvaluateContext,
): Verdict {
  let object = req.object;
  let changed = false;
  // One review: each mutated object shares its unchanged parts with the one before.
  ctx = ctx.caches ? ctx : { ...ctx, caches: evaluationCaches() };
  for (const p of policies) {
    if (!p.mutate.length || !policyMatches(p, req, ctx)) continue;
    const t0 = process.hrtime.bigint();
    const e = evaluate([p], { ...req, object: object ?? null }, ctx);
    observeEvaluation(p.name, Number(process.hrtime.bigint() - t0) / 1e9);
    if (e.mutated) {
      object = e.mutated;
      changed = true;
    }
  }
  return changed && object ? mutate(object) : allow();
}
