// The cluster's own ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) and their
// bindings, read from files and evaluated offline as the API server's ValidatingAdmissionPolicy
// plugin evaluates them (k8s.io/apiserver pkg/admission/plugin/policy/validating:
// dispatcher.go, validator.go): a policy's matchConstraints, then each binding's
// matchResources, then matchConditions, variables and validations, with failurePolicy for
// errors and the binding's validationActions for the verdict. The CEL is annex's own
// (../expr/): the same compile refusal of functions it does not implement, the same
// activation and messages as an AdmissionPolicy's CEL rules.
import type { AdmissionRequest } from '../../admission/review.js';
import {
  ruleMatches,
  selectorMatches,
  type LabelSelectorSpec,
  type RuleWithOperations,
} from '../../admission/webhook.js';
import type { Status, StatusReason } from '../../core/status.js';
import { UserError } from '../../errors.js';
import { readObjects } from '../../admission/defaults/input.js';
import { vapRefusal } from '../as-installed.js';
import { expandPaths, label } from '../load.js';
import type { MatchContext } from '../match.js';
import {
  CelActivation,
  ruleMessage,
  type CelRule,
  type NamedExpression,
} from '../expr/evaluate.js';
import { compileExpression } from '../expr/rule.js';

const GROUP_VERSION = 'admissionregistration.k8s.io/v1';
const POLICY = 'ValidatingAdmissionPolicy';
const BINDING = 'ValidatingAdmissionPolicyBinding';
type Action = 'Deny' | 'Warn' | 'Audit';

interface NamedRule extends RuleWithOperations {
  resourceNames: string[];
}

/** matchConstraints or a binding's matchResources. */
export interface VapMatch {
  resourceRules: NamedRule[];
  excludeResourceRules: NamedRule[];
  namespaceSelector?: LabelSelectorSpec;
  objectSelector?: LabelSelectorSpec;
  matchPolicy: 'Exact' | 'Equivalent';
}

export interface VapBinding {
  name: string;
  source: string;
  actions: Action[];
  match?: VapMatch;
}

export interface Vap {
  name: string;
  source: string;
  failurePolicy: 'Fail' | 'Ignore';
  match: VapMatch;
  matchConditions: NamedExpression[];
  variables: NamedExpression[];
  validations: CelRule[];
  bindings: VapBinding[];
}

export interface VapSet {
  policies: Vap[];
  /** What annex leaves out, one line each: a policy without binding, auditAnnotations. */
  notes: string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObj) : []);

function compileMatch(m: unknown): VapMatch {
  const o = isObj(m) ? m : {};
  const rules = (v: unknown): NamedRule[] =>
    list(v).map((r) => ({
      operations: strings(r.operations) as RuleWithOperations['operations'],
      apiGroups: strings(r.apiGroups),
      apiVersions: strings(r.apiVersions),
      resources: strings(r.resources),
      scope: (typeof r.scope === 'string' ? r.scope : '*') as RuleWithOperations['scope'],
      resourceNames: strings(r.resourceNames),
    }));
  return {
    resourceRules: rules(o.resourceRules),
    excludeResourceRules: rules(o.excludeResourceRules),
    ...(isObj(o.namespaceSelector)
      ? { namespaceSelector: o.namespaceSelector as LabelSelectorSpec }
      : {}),
    ...(isObj(o.objectSelector) ? { objectSelector: o.objectSelector as LabelSelectorSpec } : {}),
    matchPolicy: o.matchPolicy === 'Exact' ? 'Exact' : 'Equivalent',
  };
}

/** One policy's spec compiled; throws a message naming the field at fault. */
function compilePolicy(name: string, source: string, spec: Obj, notes: string[]): Vap {
  const where = `${source}: ${POLICY} '${name}'`;
  if (spec.paramKind !== undefined)
    throw new UserError(`${where}: paramKind (policy parameters) is not supported offline yet`);
  const validations = list(spec.validations);
  if (validations.length === 0) throw new UserError(`${where}: has no spec.validations`);
  if (spec.auditAnnotations !== undefined)
    notes.push(`${where}: auditAnnotations are not evaluated offline (ignored)`);
  const known = new Set<string>();
  const cel = (field: string, text: unknown) => {
    if (typeof text !== 'string' || text === '')
      throw new UserError(`${where}: ${field}: must be a CEL expression`);
    try {
      return compileExpression(text, known);
    } catch (e) {
      throw new UserError(`${where}: ${field}: ${(e as Error).message}`);
    }
  };
  const matchConditions = list(spec.matchConditions).map((c, i) => ({
    name: String(c.name ?? i),
    expression: cel(`matchConditions[${i}].expression`, c.expression),
  }));
  const variables = list(spec.variables).map((v, i) => {
    const expression = cel(`variables[${i}].expression`, v.expression);
    known.add(String(v.name));
    return { name: String(v.name), expression };
  });
  const failurePolicy = spec.failurePolicy ?? 'Fail';
  if (failurePolicy !== 'Fail' && failurePolicy !== 'Ignore')
    throw new UserError(`${where}: failurePolicy: must be Fail or Ignore`);
  if (!isObj(spec.matchConstraints)) throw new UserError(`${where}: has no spec.matchConstraints`);
  return {
    name,
    source,
    failurePolicy,
    match: compileMatch(spec.matchConstraints),
    matchConditions,
    variables,
    validations: validations.map((v, i) => ({
      name: `validations[${i}]`,
      expression: cel(`validations[${i}].expression`, v.expression),
      message: typeof v.message === 'string' && v.message.trim() ? v.message.trim() : undefined,
      messageExpression:
        v.messageExpression === undefined
          ? undefined
          : cel(`validations[${i}].messageExpression`, v.messageExpression),
      reason: typeof v.reason === 'string' ? v.reason : 'Invalid',
    })),
    bindings: [],
  };
}

/** Policies and bindings among `objects` (each with the file it came from), paired. */
export function compileVaps(objects: readonly { obj: Obj; source: string }[]): VapSet {
  const notes: string[] = [];
  const policies = new Map<string, Vap>();
  const bindings: (VapBinding & { policy: string })[] = [];
  for (const { obj, source } of objects) {
    const meta = isObj(obj.metadata) ? obj.metadata : {};
    const name = typeof meta.name === 'string' ? meta.name : '';
    const spec = isObj(obj.spec) ? obj.spec : {};
    if (obj.apiVersion !== GROUP_VERSION || (obj.kind !== POLICY && obj.kind !== BINDING)) {
      throw new UserError(
        `${source}: ${String(obj.apiVersion)} ${String(obj.kind)}${name ? ` '${name}'` : ''} is not a ${POLICY} or ${BINDING} of ${GROUP_VERSION}`,
      );
    }
    if (!name) throw new UserError(`${source}: a ${obj.kind} without metadata.name`);
    if (obj.kind === POLICY) {
      if (policies.has(name)) throw new UserError(`${source}: ${POLICY} '${name}' given twice`);
      policies.set(name, compilePolicy(name, source, spec, notes));
      continue;
    }
    const where = `${source}: ${BINDING} '${name}'${typeof spec.policyName === 'string' && spec.policyName ? ` (of ${POLICY} '${spec.policyName}')` : ''}`;
    if (typeof spec.policyName !== 'string' || !spec.policyName)
      throw new UserError(`${where}: has no spec.policyName`);
    if (spec.paramRef !== undefined)
      throw new UserError(`${where}: paramRef (policy parameters) is not supported offline yet`);
    const actions = strings(spec.validationActions);
    const bad = actions.find((a) => a !== 'Deny' && a !== 'Warn' && a !== 'Audit');
    if (actions.length === 0 || bad !== undefined)
      throw new UserError(`${where}: validationActions: must be one or more of Deny, Warn, Audit`);
    bindings.push({
      name,
      source,
      policy: spec.policyName,
      actions: actions as Action[],
      ...(isObj(spec.matchResources) ? { match: compileMatch(spec.matchResources) } : {}),
    });
  }
  for (const { policy, ...b } of bindings) {
    const p = policies.get(policy);
    if (!p)
      throw new UserError(
        `${b.source}: ${BINDING} '${b.name}' names ${POLICY} '${policy}', which no --vap file has`,
      );
    p.bindings.push(b);
  }
  for (const p of policies.values()) {
    if (p.bindings.length === 0)
      notes.push(`${p.source}: ${POLICY} '${p.name}' has no binding: it does nothing`);
  }
  return { policies: [...policies.values()], notes };
}

/** Every ValidatingAdmissionPolicy and binding of the files and folders; a bad one is a UserError naming its file. */
export function loadVaps(paths: readonly string[]): VapSet {
  return compileVaps(
    expandPaths(paths).flatMap((file) =>
      readObjects(file, label(file)).map((obj) => ({ obj, source: label(file) })),
    ),
  );
}

// --- matching (k8s.io/apiserver pkg/admission/plugin/policy/matching) ---

const isNamespace = (req: AdmissionRequest) =>
  req.kind.group === '' && req.kind.version === 'v1' && req.kind.kind === 'Namespace';

function labelsOf(o: unknown): Record<string, unknown> {
  const meta = isObj(o) ? o.metadata : undefined;
  return isObj(meta) && isObj(meta.labels) ? meta.labels : {};
}

function ruleHolds(r: NamedRule, req: AdmissionRequest, equivalent: boolean): boolean {
  if (r.resourceNames.length && !r.resourceNames.includes(req.name ?? '')) return false;
  if (ruleMatches(r, req)) return true;
  // Equivalent: the same group and resource in another version the rule names. Offline the
  // served versions are unknown: every version a rule names is taken as served.
  return (
    equivalent &&
    r.apiVersions.length > 0 &&
    ruleMatches({ ...r, apiVersions: ['*'] }, req) &&
    !r.apiVersions.includes(req.resource.version)
  );
}

/** Whether a matchConstraints / matchResources selects `req`. */
export function vapMatches(m: VapMatch, req: AdmissionRequest, ctx: MatchContext = {}): boolean {
  if (m.namespaceSelector) {
    if (isNamespace(req)) {
      const objs = [req.object, req.oldObject].filter((o) => o);
      if (!objs.some((o) => selectorMatches(m.namespaceSelector!, labelsOf(o)))) return false;
    } else if (req.namespace) {
      const labels = ctx.namespaceLabels ?? { 'kubernetes.io/metadata.name': req.namespace };
      if (!selectorMatches(m.namespaceSelector, labels)) return false;
    }
  }
  if (m.objectSelector) {
    const objs = [req.object, req.oldObject].filter((o) => o);
    if (!(objs.length ? objs : [{}]).some((o) => selectorMatches(m.objectSelector!, labelsOf(o))))
      return false;
  }
  if (m.excludeResourceRules.some((r) => ruleHolds(r, req, false))) return false;
  const equivalent = m.matchPolicy === 'Equivalent';
  // No resourceRules (a binding's matchResources may have none): every resource.
  return !m.resourceRules.length || m.resourceRules.some((r) => ruleHolds(r, req, equivalent));
}

// --- evaluation ---

export interface VapEvaluation {
  /** The refusal of the first denial, as the API server answers it. */
  status?: Status;
  /** Who `status` names: `ValidatingAdmissionPolicy 'p' with binding 'b'`. */
  denier?: string;
  /** The other policies/bindings that deny: the API server may name one of them instead. */
  otherDenials: string[];
  /** `Validation failed for ValidatingAdmissionPolicy …` lines (kubectl prefixes `Warning: `). */
  warnings: string[];
  /** What Audit bindings record in the audit log (kubectl prints nothing). */
  audits: string[];
}

interface Decision {
  message: string;
  reason: StatusReason;
}

/** A policy's decisions for one request: a Deny per failed validation or error; none when it does not apply. */
function decide(p: Vap, req: AdmissionRequest, ctx: MatchContext): Decision[] {
  const error = (e: unknown): Decision[] =>
    p.failurePolicy === 'Ignore' ? [] : [{ message: (e as Error).message, reason: 'Invalid' }];
  const act = new CelActivation(req, req.object ?? null, ctx, p.variables);
  if (p.matchConditions.length) {
    // Any false skips the policy; otherwise the errors, aggregated, are its failure.
    const errors: string[] = [];
    for (const c of p.matchConditions) {
      try {
        if (!act.bool(c.expression)) return [];
      } catch (e) {
        errors.push((e as Error).message);
      }
    }
    const unique = [...new Set(errors)];
    if (unique.length)
      return error(new Error(unique.length === 1 ? unique[0] : `[${unique.join(', ')}]`));
  }
  const out: Decision[] = [];
  for (const v of p.validations) {
    try {
      const message = ruleMessage(v, act);
      if (message !== undefined)
        out.push({ message: message.trim(), reason: v.reason as StatusReason });
    } catch (e) {
      out.push(...error(e));
    }
  }
  return out;
}

/** What the ValidatingAdmissionPolicy plugin answers to `req` with these policies installed. */
export function evaluateVaps(
  set: VapSet,
  req: AdmissionRequest,
  ctx: MatchContext = {},
): VapEvaluation {
  const denials: { status: Status; who: string }[] = [];
  const warnings: string[] = [];
  const audits: string[] = [];
  for (const p of set.policies) {
    if (!vapMatches(p.match, req, ctx)) continue;
    const bindings = p.bindings.filter((b) => !b.match || vapMatches(b.match, req, ctx));
    if (!bindings.length) continue;
    const decisions = decide(p, req, ctx);
    for (const b of bindings) {
      const who = `${POLICY} '${p.name}' with binding '${b.name}'`;
      for (const d of decisions) {
        for (const a of b.actions) {
          if (a === 'Deny')
            denials.push({
              status: vapRefusal(req, `${who} denied request: ${d.message}`, d.reason),
              who,
            });
          else if (a === 'Warn') warnings.push(`Validation failed for ${who}: ${d.message}`);
          else audits.push(`${who}: ${d.message}`);
        }
      }
    }
  }
  const [first, ...rest] = denials;
  const others = [...new Set(rest.map((d) => d.who))].filter((w) => w !== first?.who);
  return {
    ...(first ? { status: first.status, denier: first.who } : {}),
    otherDenials: others,
    // The API server sends each warning text once (endpoints/filters/warning.go).
    warnings: [...new Set(warnings)],
    audits,
  };
}
