// One validate rule → one CEL expression of type list(string): the causes the webhook
// path (evaluate.ts) would report for it, each rendered `<field>: <message>` exactly as
// denyInvalid joins them. Or the reason the rule has no CEL form.
//
// A path is a chain of steps from `$`: `.name`, `['key']` and `[*]` / `.*` (every item of
// a list, every value of a map). A step is guarded as jsonpath-plus skips what is absent
// (`has(x.f)`, `'k' in m`); `[*]` becomes a two-variable comprehension (index or key,
// value) so the index can be printed in the field path, `containers[1].image`.
import type { CompiledValidateRule } from '../compile.js';
import type { NameRule } from '../../admission/names/index.js';
import { fieldOfPath, MAP_FIELDS } from '../paths.js';
import { re2Pattern } from './regex.js';

export type Step = { field: string } | { all: true };

/** A CEL string literal (JSON's escapes are CEL's). */
export const lit = (s: string) => JSON.stringify(s);

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Kubernetes' CEL escapes property names that are CEL keywords as __name__.
const RESERVED = new Set(
  'true false null in as break const continue else for function if import let loop package namespace return var void while'.split(
    ' ',
  ),
);

const STEP = /^(?:\.([A-Za-z_][\w-]*)|\.\*|\[\*\]|\['([^'\\\]]*)'\]|\["([^"\\\]]*)"\])/;

/** The steps of a plain path, or why it is not one. */
export function parsePath(path: string): Step[] | { reason: string } {
  const steps: Step[] = [];
  let rest = path.slice(1);
  while (rest !== '') {
    const m = STEP.exec(rest);
    if (!m) {
      const why = rest.startsWith('..')
        ? 'recursive descent (..)'
        : /^\[\s*\?/.test(rest)
          ? 'a filter expression'
          : /^\[\s*\(/.test(rest)
            ? 'a script expression'
            : /^\[\s*-?\d/.test(rest)
              ? 'an index or slice'
              : `the step ${JSON.stringify(rest.slice(0, 20))}`;
      return { reason: `JSONPath ${path}: ${why} has no CEL form` };
    }
    const name = m[1] ?? m[2] ?? m[3];
    steps.push(name === undefined ? { all: true } : { field: name });
    rest = rest.slice(m[0].length);
  }
  if (steps.length === 0) return { reason: `JSONPath ${path}: the whole object has no CEL form` };
  if ('all' in steps[0]!)
    return { reason: `JSONPath ${path}: a wildcard at the root has no CEL form` };
  return steps;
}

/**
 * CEL for `e`'s field `name` (`e` being the value of the field `previous`), and the guard
 * that it is there. Entries of the maps paths.ts knows are indexed: Kubernetes' escaping
 * of keyword-named fields (`__namespace__`) is for object fields, not map keys.
 */
export function member(e: string, name: string, previous?: string): { get: string; has: string } {
  const inMap = previous !== undefined && MAP_FIELDS.has(previous);
  if (IDENTIFIER.test(name) && !inMap) {
    const n = RESERVED.has(name) ? `__${name}__` : name;
    return { get: `${e}.${n}`, has: `has(${e}.${n})` };
  }
  return { get: `${e}[${lit(name)}]`, has: `${lit(name)} in ${e}` };
}

/** How paths.ts prints a static segment after `previous`. */
function renderStatic(name: string, previous: string | undefined, first: boolean): string {
  if ((previous !== undefined && MAP_FIELDS.has(previous)) || !IDENTIFIER.test(name)) {
    return `[${name}]`;
  }
  return first ? name : `.${name}`;
}

/** CEL string expression printing a map key `k` after `previous`, as paths.ts does. */
function renderKey(k: string, previous: string | undefined): string {
  const bracket = `'[' + ${k} + ']'`;
  if (previous !== undefined && MAP_FIELDS.has(previous)) return bracket;
  return `(${k}.matches('^[A-Za-z_][A-Za-z0-9_]*$') ? '.' + ${k} : ${bracket})`;
}

/** Concatenation of string literals and CEL string expressions, literals merged. */
function concat(parts: (string | { cel: string })[]): string {
  const merged: (string | { cel: string })[] = [];
  for (const p of parts) {
    const last = merged.at(-1);
    if (typeof p === 'string' && typeof last === 'string') merged[merged.length - 1] = last + p;
    else merged.push(p);
  }
  return merged.map((p) => (typeof p === 'string' ? lit(p) : p.cel)).join(' + ') || "''";
}

type Leaf = (value: string, field: string) => string;

/**
 * The list(string) expression: `leaf(value, field)` for every match of the steps from
 * `root`, in jsonpath order, flattened.
 */
function overMatches(root: string, steps: readonly Step[], leaf: Leaf): string {
  let depth = 0;
  const walk = (
    e: string,
    i: number,
    field: (string | { cel: string })[],
    prev?: string,
  ): string => {
    if (i === steps.length) return `(${leaf(`dyn(${e})`, concat(field))})`;
    const s = steps[i]!;
    if ('field' in s) {
      const m = member(e, s.field, prev);
      const seg = renderStatic(s.field, prev, field.length === 0);
      return `(${m.has} ? ${walk(m.get, i + 1, [...field, seg], s.field)} : [])`;
    }
    // A map's entries in key order, as the API server's JSON (Go sorts map keys) gives
    // them to the webhook; a list's items with their index.
    const d = depth++;
    const [k, v, m] = [`k${d}`, `v${d}`, `m${d}`];
    const overMap = (map: string) =>
      `${map}.map(${m}, ${m}).sort().transformList(${v}, ${k}, ${walk(`${map}[${k}]`, i + 1, [...field, { cel: renderKey(k, prev) }])}).flatten()`;
    if (prev !== undefined && MAP_FIELDS.has(prev)) return overMap(e);
    const overList = `${e}.transformList(${k}, ${v}, ${walk(v, i + 1, [...field, { cel: `'[' + string(${k}) + ']'` }])}).flatten()`;
    return `(type(dyn(${e})) == map ? ${overMap(`dyn(${e})`)} : ${overList})`;
  };
  return walk(root, 0, []);
}

/** A boolean: some match of the steps satisfies `test(value)`. */
function someMatch(root: string, steps: readonly Step[], test: (v: string) => string): string {
  let depth = 0;
  const walk = (e: string, i: number, prev?: string): string => {
    if (i === steps.length) return `(${test(`dyn(${e})`)})`;
    const s = steps[i]!;
    if ('field' in s) {
      const m = member(e, s.field, prev);
      return `(${m.has} && ${walk(m.get, i + 1, s.field)})`;
    }
    const k = `k${depth}`;
    const v = `v${depth++}`;
    return `${e}.exists(${k}, ${v}, ${walk(v, i + 1)})`;
  };
  return walk(root, 0);
}

/** formatBadValue in CEL: strings Go-quoted, numbers and booleans plain. */
const badValue = (v: string) =>
  `(type(${v}) == string ? strings.quote(string(${v})) : string(${v}))`;

/** evaluate.ts' `present`: set, and not "" (Go's unset). */
const present = (v: string) => `${v} != ''`;

/** format.<name>() on v1.37.2 gives annex's texts for these (measured by the e2e differential). */
const FORMATS: Partial<Record<NameRule, string>> = {
  'dns1123-label': 'dns1123Label',
  'dns1123-subdomain': 'dns1123Subdomain',
  'dns1035-label': 'dns1035Label',
  'label-value': 'labelValue',
};
const NO_FORMAT: Partial<Record<NameRule, string>> = {
  'qualified-name':
    "format.qualifiedName() on v1.37.2 says 'name part must be no more than 63 bytes' where the webhook says 'characters'",
  'label-key': 'the CEL format library has no labelKey',
  'path-segment': 'the CEL format library has no pathSegment',
};

const NUMBER = (v: string) => `(type(${v}) == int || type(${v}) == uint || type(${v}) == double)`;
const STRING = (v: string) => `type(${v}) == string`;
const TYPES: Record<string, (v: string) => string> = {
  string: STRING,
  boolean: (v) => `type(${v}) == bool`,
  integer: (v) => `(type(${v}) == int || type(${v}) == uint)`,
  number: NUMBER,
};

const double = (n: number) => (Number.isInteger(n) ? `${n}.0` : String(n));

function scalarLiteral(x: unknown): string | undefined {
  if (typeof x === 'string') return lit(x);
  if (typeof x === 'boolean') return String(x);
  if (typeof x === 'number' && Number.isFinite(x)) return double(x);
  return undefined;
}

/**
 * The schema's checks, in ajv's order of evaluation (type; const, enum; number
 * keywords; string keywords), each as [applies-and-fails, ajv's message]: the webhook
 * reports ajv's first error.
 */
function schemaChecks(
  schema: Record<string, unknown>,
  v: string,
): { checks: [string, string][] } | { reason: string } {
  const SUPPORTED = new Set([
    'type',
    'const',
    'enum',
    'maximum',
    'minimum',
    'maxLength',
    'minLength',
    'pattern',
    'description',
    'title',
  ]);
  const other = Object.keys(schema).find((k) => !SUPPORTED.has(k));
  if (other !== undefined) return { reason: `the schema keyword ${other} has no CEL form here` };
  const checks: [string, string][] = [];
  const { type } = schema;
  if (type !== undefined) {
    const test = typeof type === 'string' ? TYPES[type] : undefined;
    if (!test) return { reason: `schema type ${JSON.stringify(type)} has no CEL form here` };
    checks.push([`!(${test(v)})`, `must be ${type}`]);
  }
  if ('const' in schema) {
    const c = scalarLiteral(schema.const);
    if (c === undefined) return { reason: 'a const that is not a string, number or boolean' };
    checks.push([`${v} != ${c}`, 'must be equal to constant']);
  }
  if (schema.enum !== undefined) {
    const values = (schema.enum as unknown[]).map(scalarLiteral);
    if (values.some((x) => x === undefined)) {
      return { reason: 'an enum value that is not a string, number or boolean' };
    }
    const allowed = (schema.enum as unknown[]).map((a) => JSON.stringify(a)).join(', ');
    checks.push([
      `!(${v} in [${values.join(', ')}])`,
      `must be equal to one of the allowed values: ${allowed}`,
    ]);
  }
  // [keyword, applies-and-fails, ajv's message] for the number and string limits, in ajv's order.
  const limits = [
    ['maximum', (n: number) => `${NUMBER(v)} && double(${v}) > ${double(n)}`, 'must be <= %'],
    ['minimum', (n: number) => `${NUMBER(v)} && double(${v}) < ${double(n)}`, 'must be >= %'],
    [
      'maxLength',
      (n: number) => `${STRING(v)} && size(string(${v})) > ${n}`,
      'must NOT have more than % characters',
    ],
    [
      'minLength',
      (n: number) => `${STRING(v)} && size(string(${v})) < ${n}`,
      'must NOT have fewer than % characters',
    ],
  ] as const;
  for (const [k, fails, message] of limits) {
    const n = schema[k];
    if (n === undefined) continue;
    if (typeof n !== 'number') return { reason: `${k} is not a number` };
    checks.push([fails(n), message.replace('%', String(n))]);
  }
  if (schema.pattern !== undefined) {
    const p = schema.pattern as string;
    const r = re2Pattern(p);
    if ('reason' in r) return r;
    checks.push([
      `type(${v}) == string && !string(${v}).matches(${lit(r.re2)})`,
      `must match pattern "${p}"`,
    ]);
  }
  return { checks };
}

/** The rule's causes as a CEL list(string) over `root`, or why it has none. */
export function ruleToCel(
  rule: CompiledValidateRule,
  root: string,
): { cel: string } | { reason: string } {
  // CEL rules go to the API server verbatim (compile.ts), never through this translation.
  if (rule.type === 'expression') return { reason: 'a CEL rule is not a path rule' };
  // PodSecurity's checks and their wording have no CEL translation here: the webhook runs them.
  if (rule.type === 'podSecurity') return { reason: 'the Pod Security Standards have no CEL form' };
  const steps = parsePath(rule.path);
  if ('reason' in steps) return steps;
  const detail = (d: string) => (d === '' ? '' : `: ${d}`);
  switch (rule.type) {
    case 'required': {
      const cause = `${fieldOfPath(rule.path)}: Required value${detail(rule.message ?? '')}`;
      return { cel: `(${someMatch(root, steps, present)} ? [] : [${lit(cause)}])` };
    }
    case 'forbidden': {
      const body = `: Forbidden${detail(rule.message ?? '')}`;
      return {
        cel: overMatches(root, steps, (v, f) => `${present(v)} ? [${f} + ${lit(body)}] : []`),
      };
    }
    case 'nameRule': {
      const format = FORMATS[rule.nameRule];
      if (!format) {
        return {
          reason: NO_FORMAT[rule.nameRule] ?? `name rule ${rule.nameRule} has no CEL format`,
        };
      }
      const notString = `must be a string`;
      return {
        cel: overMatches(root, steps, (v, f) => {
          const invalid = `${f} + ': Invalid value: ' + ${badValue(v)} + ': '`;
          const errs = `format.${format}().validate(string(${v}))`;
          const found =
            rule.message === undefined
              ? `${errs}.orValue([]).map(d, ${invalid} + d)`
              : `(${errs}.hasValue() ? [${invalid} + ${lit(rule.message)}] : [])`;
          return `(type(${v}) == string ? ${found} : [${invalid} + ${lit(rule.message ?? notString)}])`;
        }),
      };
    }
    case 'schema': {
      const schema = rule.validate.schema;
      if (typeof schema !== 'object' || schema === null) {
        return { reason: 'a boolean schema has no CEL form here' };
      }
      const probe = schemaChecks(schema as Record<string, unknown>, 'x');
      if ('reason' in probe) return probe;
      return {
        cel: overMatches(root, steps, (v, f) => {
          const { checks } = schemaChecks(schema as Record<string, unknown>, v) as {
            checks: [string, string][];
          };
          const invalid = `${f} + ': Invalid value: ' + ${badValue(v)} + ': '`;
          // The first failing check's message (or the rule's own), as ajv's errors[0].
          const msg = checks.reduceRight(
            (rest, [fails, m]) => `(${fails} ? [${invalid} + ${lit(rule.message ?? m)}] : ${rest})`,
            '[]',
          );
          return msg;
        }),
      };
    }
  }
}
