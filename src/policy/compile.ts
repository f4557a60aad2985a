// An AdmissionPolicy object → a CompiledPolicy: shape checked against the one schema
// (schema.ts, also the CRD's), each rule's JSON Schema compiled once, each JSONPath
// checked, name rules and kinds resolved, CEL rules parsed and their functions checked. A policy that does not compile is refused
// with a PolicyCompileError naming the rule and the fault; nothing is left for
// evaluation to discover except what depends on the object.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { linearRegExp } from './linear-regexp.js';
import type { NameRule } from '../admission/names/index.js';
import { rulesForKinds } from '../admission/kinds.js';
import type { LabelSelectorSpec, RuleWithOperations } from '../admission/webhook.js';
import type { JsonSchema } from '../core/types.js';
import { nestsDeeperThan } from '../json.js';
import { NAME_RULES, nameRuleFor } from './names.js';
import { checkPath, isRecord } from './paths.js';
import { pathFault } from './fields/check.js';
import type { CelRule, NamedExpression } from './expr/evaluate.js';
import { compileExpression } from './expr/rule.js';
import type { Level } from './pss/index.js';
import {
  MUTATE_KIND_FAULT,
  MUTATE_KINDS,
  PATH_FAULT,
  policySpecSchema,
  VALIDATE_KIND_FAULT,
  VALIDATE_KINDS,
} from './schema.js';
import {
  POLICY_GROUP,
  POLICY_KIND,
  POLICY_VERSION,
  PolicyCompileError,
  type AdmissionPolicy,
  type AdmissionPolicySpec,
  type PolicyAction,
  type PolicyMatch,
} from './types.js';

/** What a match or exclude block selects, resolved. */
export interface CompiledMatch {
  /** Webhook rules; an exclude block naming no kinds or resources gets one for every resource. */
  rules: readonly RuleWithOperations[];
  namespaceSelector: LabelSelectorSpec | undefined;
  objectSelector: LabelSelectorSpec | undefined;
  /** undefined = every namespace. */
  namespaces: ReadonlySet<string> | undefined;
}

interface RuleBase {
  name: string;
  path: string;
  message: string | undefined;
}

export type CompiledValidateRule = RuleBase &
  (
    | { type: 'nameRule'; nameRule: NameRule }
    | { type: 'schema'; validate: ValidateFunction }
    | { type: 'required' }
    | { type: 'forbidden' }
    /** A CEL rule; its path is `$` (the whole object), for the error causes it reports. */
    | { type: 'expression'; cel: CelRule }
    /** The Pod Security Standards on the object's pod spec; its path is `$` too. */
    | { type: 'podSecurity'; level: Level; version: string }
  );

export interface CompiledMutateRule {
  name: string;
  path: string;
  setIfAbsent: Record<string, unknown> | undefined;
  podTemplateDefaults: boolean;
}

export interface CompiledPolicy {
  name: string;
  generation: number | undefined;
  /** The object it was compiled from. */
  source: AdmissionPolicy;
  actions: readonly PolicyAction[];
  failurePolicy: 'Fail' | 'Ignore';
  match: CompiledMatch;
  exclude: CompiledMatch | undefined;
  validate: readonly CompiledValidateRule[];
  mutate: readonly CompiledMutateRule[];
  /** VAP's variables and matchConditions, compiled (expr/). */
  variables: readonly NamedExpression[];
  matchConditions: readonly NamedExpression[];
  /** What the API server must send annex for this policy: `match` as webhook rules. */
  rules: readonly RuleWithOperations[];
}

const LIST_KEYWORDS = [
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-map-type',
  'x-kubernetes-int-or-string',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-validations',
];

/** Far deeper than any schema or default a policy needs; shallow enough for Ajv's recursion. */
const MAX_SPEC_DEPTH = 100;

/**
 * The one Ajv instance: policies' shape and every rule's schema (draft-07, strict keywords),
 * its patterns matched in linear time (./linear-regexp.ts).
 */
export const ajv = new Ajv({ allErrors: true, logger: false, code: { regExp: linearRegExp } });
for (const keyword of LIST_KEYWORDS) ajv.addKeyword(keyword);

/**
 * The API server prunes and (with kubectl's default strict field validation) refuses
 * unknown fields; ajv keeps them. The same schema with `additionalProperties: false` on
 * every closed object makes a typo (`nameRul:`) an error offline too.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!isRecord(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    out[k] = k === 'enum' || k === 'default' ? v : closed(v);
  }
  if (isRecord(schema.properties) && schema['x-kubernetes-preserve-unknown-fields'] !== true) {
    out.additionalProperties = false;
  }
  return out;
}

const validateSpec = ajv.compile(closed(policySpecSchema) as JsonSchema);

/** `/validate/0/path` → `spec.validate[0].path`. */
function fieldOf(instancePath: string): string {
  return instancePath
    .split('/')
    .slice(1)
    .reduce((f, s) => (/^\d+$/.test(s) ? `${f}[${s}]` : `${f}.${s}`), 'spec');
}

function specFault(
  policy: string,
  spec: Record<string, unknown>,
  e: ErrorObject,
): PolicyCompileError {
  const [, list, index, field] =
    /^\/(validate|mutate)\/(\d+)(?:\/(\w+))?/.exec(e.instancePath) ?? [];
  const item = list ? (spec[list] as unknown[])[Number(index)] : undefined;
  const ruleName = isRecord(item) && typeof item.name === 'string' ? item.name : undefined;
  const rule = ruleName ?? (list ? `${list}[${index}]` : fieldOf(e.instancePath));
  const where = fieldOf(e.instancePath);
  if (list === 'validate' && field === 'nameRule' && e.keyword === 'enum') {
    return new PolicyCompileError(
      policy,
      rule,
      `unknown name rule ${JSON.stringify(isRecord(item) ? item.nameRule : '')}: expected one of ${NAME_RULES.join(', ')}`,
    );
  }
  if (e.keyword === 'additionalProperties') {
    const extra = String((e.params as { additionalProperty?: string }).additionalProperty);
    return new PolicyCompileError(policy, rule, `${where}: unknown field ${JSON.stringify(extra)}`);
  }
  const allowed = (e.params as { allowedValues?: unknown[] }).allowedValues;
  const detail = allowed
    ? `${e.message ?? ''}: ${allowed.map((a) => JSON.stringify(a)).join(', ')}`
    : e.message;
  return new PolicyCompileError(policy, rule, `${where}: ${detail ?? 'invalid'}`);
}

function compileMatch(policy: string, field: 'match' | 'exclude', m: PolicyMatch): CompiledMatch {
  const operations: RuleWithOperations['operations'] =
    m.operations ?? (field === 'match' ? ['CREATE', 'UPDATE'] : ['*']);
  let rules: RuleWithOperations[];
  if (m.kinds?.length || m.resources?.length) {
    rules = (m.resources ?? []).map((r) => ({ ...r, operations }));
    try {
      if (m.kinds?.length) rules.push(...rulesForKinds(m.kinds, operations));
    } catch (e) {
      const fault = (e as Error).message.replace(/^match\./, `${field}.`);
      throw new PolicyCompileError(policy, field, fault);
    }
  } else if (field === 'match') {
    throw new PolicyCompileError(policy, field, 'match: set kinds or resources');
  } else {
    rules = [{ operations, apiGroups: ['*'], apiVersions: ['*'], resources: ['*', '*/*'] }];
  }
  return {
    rules,
    namespaceSelector: m.namespaceSelector,
    objectSelector: m.objectSelector,
    namespaces: m.namespaces?.length ? new Set(m.namespaces) : undefined,
  };
}

function compileSchema(policy: string, rule: string, schema: JsonSchema): ValidateFunction {
  try {
    const validate = ajv.compile(schema);
    // Ajv caches by schema object (and registers any $id): a live policy set recompiling
    // every generation would otherwise grow the cache forever, or refuse a repeated $id.
    ajv.removeSchema(schema);
    return validate;
  } catch (e) {
    throw new PolicyCompileError(policy, rule, `schema: ${(e as Error).message}`);
  }
}

function checkedPath(policy: string, rule: string, path: string, kinds: string[]): string {
  const fault = checkPath(path) ?? pathFault(path, kinds);
  if (fault) throw new PolicyCompileError(policy, rule, `path ${JSON.stringify(path)}: ${fault}`);
  return path;
}

function uniqueNames(policy: string, list: readonly { name: string }[], what: string): void {
  const seen = new Set<string>();
  for (const { name } of list) {
    if (seen.has(name)) throw new PolicyCompileError(policy, name, `duplicate ${what} rule name`);
    seen.add(name);
  }
}

/** Compile an AdmissionPolicy object (as applied or listed); throws PolicyCompileError. */
export function compilePolicy(obj: unknown): CompiledPolicy {
  const o = isRecord(obj) ? obj : {};
  const meta = isRecord(o.metadata) ? o.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : '';
  if (o.apiVersion !== `${POLICY_GROUP}/${POLICY_VERSION}` || o.kind !== POLICY_KIND) {
    throw new PolicyCompileError(
      name,
      'apiVersion',
      `expected apiVersion ${POLICY_GROUP}/${POLICY_VERSION}, kind ${POLICY_KIND}`,
    );
  }
  if (name === '') throw new PolicyCompileError(name, 'metadata', 'metadata.name is required');
  if (!isRecord(o.spec)) throw new PolicyCompileError(name, 'spec', 'spec is required');
  // Before the schema check: validating and quoting a value recurses through it.
  if (nestsDeeperThan(o.spec, MAX_SPEC_DEPTH))
    throw new PolicyCompileError(name, 'spec', `nested more than ${MAX_SPEC_DEPTH} levels deep`);
  if (!validateSpec(o.spec)) {
    const errors = validateSpec.errors ?? [];
    // The most telling error first: an unknown field, then an unknown name rule.
    const first =
      errors.find((e) => e.keyword === 'additionalProperties') ??
      errors.find((e) => e.keyword === 'enum' && e.instancePath.endsWith('/nameRule')) ??
      errors[0];
    throw first ? specFault(name, o.spec, first) : new PolicyCompileError(name, 'spec', 'invalid');
  }
  const spec = o.spec as unknown as AdmissionPolicySpec;
  const validate = spec.validate ?? [];
  const mutate = spec.mutate ?? [];
  uniqueNames(name, validate, 'validate');
  uniqueNames(name, mutate, 'mutate');
  // The CRD's x-kubernetes-validations say the same, with the same words (schema.ts).
  const setIn = (r: object, fields: readonly string[]) =>
    fields.filter((f) => (r as Record<string, unknown>)[f] !== undefined).length;
  for (const r of validate) {
    if (setIn(r, VALIDATE_KINDS) !== 1)
      throw new PolicyCompileError(name, r.name, VALIDATE_KIND_FAULT);
    if ((r.path === undefined) === (r.expression === undefined && r.podSecurity === undefined))
      throw new PolicyCompileError(name, r.name, PATH_FAULT);
  }
  for (const r of mutate) {
    if (setIn(r, MUTATE_KINDS) < 1) throw new PolicyCompileError(name, r.name, MUTATE_KIND_FAULT);
  }

  const match = compileMatch(name, 'match', spec.match);
  const known = new Set<string>();
  const cel = (rule: string, field: string, text: string) => {
    try {
      return compileExpression(text, known);
    } catch (e) {
      throw new PolicyCompileError(name, rule, `${field}: ${(e as Error).message}`);
    }
  };
  // matchConditions first and without variables, as VAP evaluates (and allows) them.
  const matchConditions = (spec.matchConditions ?? []).map((c) => ({
    name: c.name,
    expression: cel(`matchConditions[${c.name}]`, 'expression', c.expression),
  }));
  // In order: a variable reads only the ones before it.
  const variables = (spec.variables ?? []).map((v) => {
    const expression = cel(`variables[${v.name}]`, 'expression', v.expression);
    known.add(v.name);
    return { name: v.name, expression };
  });
  // Paths are checked against the built-in kinds' fields; custom resources' are not known here.
  const pathKinds = spec.match.resources?.length ? [] : (spec.match.kinds ?? []);
  const compiledValidate = validate.map((r): CompiledValidateRule => {
    if (r.expression !== undefined) {
      const rule: CelRule = {
        name: r.name,
        expression: cel(r.name, 'expression', r.expression),
        message: r.message,
        messageExpression:
          r.messageExpression === undefined
            ? undefined
            : cel(r.name, 'messageExpression', r.messageExpression),
        reason: r.reason ?? 'Invalid',
      };
      return { name: r.name, path: '$', message: r.message, type: 'expression', cel: rule };
    }
    if (r.podSecurity !== undefined) {
      const { level, version = 'latest' } = r.podSecurity;
      return { name: r.name, path: '$', message: r.message, type: 'podSecurity', level, version };
    }
    const base = {
      name: r.name,
      path: checkedPath(name, r.name, r.path!, pathKinds),
      message: r.message,
    };
    if (r.nameRule !== undefined) {
      const nameRule = nameRuleFor(r.nameRule);
      // The schema's enum refuses these first; kept for rules built in code.
      if (!nameRule) throw new PolicyCompileError(name, r.name, `unknown name rule ${r.nameRule}`);
      return { ...base, type: 'nameRule', nameRule };
    }
    if (r.schema !== undefined) {
      return { ...base, type: 'schema', validate: compileSchema(name, r.name, r.schema) };
    }
    return { ...base, type: r.required === true ? 'required' : 'forbidden' };
  });
  const compiledMutate = mutate.map((r): CompiledMutateRule => ({
    name: r.name,
    path: checkedPath(name, r.name, r.path, pathKinds),
    setIfAbsent: r.setIfAbsent,
    podTemplateDefaults: r.podTemplateDefaults === true,
  }));
  const generation = typeof meta.generation === 'number' ? meta.generation : undefined;
  return {
    name,
    generation,
    source: o as unknown as AdmissionPolicy,
    actions: spec.actions ?? ['Deny'],
    failurePolicy: spec.failurePolicy ?? 'Fail',
    match,
    exclude: spec.exclude ? compileMatch(name, 'exclude', spec.exclude) : undefined,
    validate: compiledValidate,
    mutate: compiledMutate,
    variables,
    matchConditions,
    rules: match.rules,
  };
}
