// One mutate rule → a CEL expression of type list(JSONPatch) for a MutatingAdmissionPolicy:
// what evaluate.ts' setIfAbsent does to every match of the rule's path — each field of the
// defaults that is absent is added, objects present are descended into, nothing is ever
// overwritten. Or the reason the rule has no CEL form (pod-template defaults, paths
// outside the subset of rules.ts, defaults that are not JSON).
import type { CompiledMutateRule } from '../compile.js';
import { isRecord, MAP_FIELDS } from '../paths.js';
import { lit, member, parsePath, type Step } from './rules.js';

/** A JSON value as a CEL literal (maps, lists, strings, numbers, booleans). */
function literal(v: unknown): string | undefined {
  if (typeof v === 'string') return lit(v);
  if (typeof v === 'boolean') return String(v);
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (Array.isArray(v)) {
    const items = v.map(literal);
    return items.some((x) => x === undefined) ? undefined : `[${items.join(', ')}]`;
  }
  if (isRecord(v)) {
    const entries = Object.entries(v).map(([k, x]) => {
      const l = literal(x);
      return l === undefined ? undefined : `${lit(k)}: ${l}`;
    });
    return entries.some((x) => x === undefined) ? undefined : `{${entries.join(', ')}}`;
  }
  return undefined;
}

/** JSON Pointer escaping of a static key. */
const escape = (k: string) => k.replaceAll('~', '~0').replaceAll('/', '~1');

/** A concatenation of pointer pieces (literal strings or CEL string expressions). */
type Pointer = (string | { cel: string })[];
const pointerCel = (p: Pointer) =>
  p.map((x) => (typeof x === 'string' ? lit(x) : x.cel)).join(' + ') || "''";

/** The patch ops adding what `defaults` has and the object `e` (at `ptr`) lacks. */
function absentOps(
  e: string,
  ptr: Pointer,
  defaults: Record<string, unknown>,
  previous?: string,
): string {
  const parts = Object.entries(defaults).map(([k, v]) => {
    const m = member(e, k, previous);
    const at: Pointer = [...ptr, `/${escape(k)}`];
    const add = `[JSONPatch{op: 'add', path: ${pointerCel(at)}, value: ${literal(v)}}]`;
    const present = isRecord(v) ? absentOps(m.get, at, v, k) : '[]';
    return `(${m.has} ? ${present} : ${add})`;
  });
  return parts.join(' + ') || '[]';
}

function overMatches(
  root: string,
  steps: readonly Step[],
  leaf: (e: string, p: Pointer, prev?: string) => string,
) {
  let depth = 0;
  const walk = (e: string, i: number, ptr: Pointer, prev?: string): string => {
    if (i === steps.length) return `(${leaf(e, ptr, prev)})`;
    const s = steps[i]!;
    if ('field' in s) {
      const m = member(e, s.field, prev);
      return `(${m.has} ? ${walk(m.get, i + 1, [...ptr, `/${escape(s.field)}`], s.field)} : [])`;
    }
    const d = depth++;
    const [k, v] = [`k${d}`, `v${d}`];
    // Lists only: a map's keys would need escaping at run time, and a default set on
    // every value of a map is not a use anyone has.
    return `${e}.transformList(${k}, ${v}, ${walk(v, i + 1, [...ptr, { cel: `'/' + string(${k})` }])}).flatten()`;
  };
  return walk(root, 0, []);
}

/** The rule's patch as CEL list(JSONPatch) over `root`, or why it has none. */
export function mutateRuleToCel(
  rule: CompiledMutateRule,
  root: string,
): { cel: string } | { reason: string } {
  if (rule.podTemplateDefaults) {
    return {
      reason: "podTemplateDefaults (the API server's pod-template defaults) have no CEL form",
    };
  }
  if (!rule.setIfAbsent || literal(rule.setIfAbsent) === undefined) {
    return { reason: 'setIfAbsent holds a value with no CEL literal (null)' };
  }
  const steps = parsePath(rule.path);
  if ('reason' in steps) return steps;
  const overMap = steps.findIndex(
    (s, i) =>
      'all' in s && i > 0 && MAP_FIELDS.has((steps[i - 1] as { field: string }).field ?? ''),
  );
  if (overMap >= 0) return { reason: `JSONPath ${rule.path}: [*] over a map has no CEL form here` };
  const defaults = rule.setIfAbsent;
  return { cel: overMatches(root, steps, (e, ptr, prev) => absentOps(e, ptr, defaults, prev)) };
}
