// A rule's JSONPath checked against the kinds its policy matches: a path that can match
// nothing in any of them (`$.spec.volume[*].hostPath` on Pods: the field is `volumes`)
// would make a `forbidden` rule allow everything and a `required` one refuse everything,
// silently. Refused at compile time (so at `kubectl apply` and in `annex check`), naming
// the field and the nearest valid one. Kinds without a schema here (custom resources
// matched by `resources`) are not checked.
import { JSONPath } from 'jsonpath-plus';
import { BUILTIN_FIELDS } from './builtin.js';
import type { FieldTree, Shape } from './tree.js';

const ANY = '*';

/** Children of a shape under one path step; undefined when the step cannot match there. */
function step(tree: FieldTree, shape: Shape, token: string): Shape[] | undefined {
  if (shape === ANY) return [ANY];
  const wildcard = token === '*' || token.startsWith('?(');
  if (shape.startsWith('[]')) {
    if (wildcard || /^-?\d*(:-?\d*){0,2}$|^-?\d+(,-?\d+)+$/.test(token)) return [shape.slice(2)];
    return token === 'length' ? [''] : undefined;
  }
  if (shape.startsWith('{}')) return [shape.slice(2)];
  if (shape === '') return token === 'length' ? [''] : undefined;
  const fields = tree.types[shape] ?? {};
  if (wildcard) return Object.values(fields);
  // A union (`['a','b']`, `["a","b"]`, `[a,b]`): field names hold no commas.
  const names = token.split(/\s*,\s*/).map((n) => n.replace(/^['"]|['"]$/g, ''));
  const found = names.filter((n) => Object.hasOwn(fields, n)).map((n) => fields[n]!);
  return found.length ? found : undefined;
}

/** Every shape at or below these ones (recursive descent), including ANY if reachable. */
function descendants(tree: FieldTree, shapes: readonly Shape[]): Set<Shape> {
  const seen = new Set<Shape>();
  const todo = [...shapes];
  for (let s = todo.pop(); s !== undefined; s = todo.pop()) {
    if (seen.has(s)) continue;
    seen.add(s);
    if (s.startsWith('[]') || s.startsWith('{}')) todo.push(s.slice(2));
    else if (s !== '' && s !== ANY) todo.push(...Object.values(tree.types[s] ?? {}));
  }
  return seen;
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(
        Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)),
      );
    prev = row;
  }
  return prev[b.length]!;
}

/** The nearest of the candidates, when near enough to be a likely typo. */
function nearest(name: string, candidates: Iterable<string>): string | undefined {
  let best: [string, number] | undefined;
  for (const c of candidates) {
    const d = c.toLowerCase() === name.toLowerCase() ? 0 : distance(name, c);
    if (!best || d < best[1]) best = [c, d];
  }
  return best && best[1] <= Math.max(2, Math.floor(name.length / 3)) ? best[0] : undefined;
}

/** Why a path can match nothing in one kind (undefined: it can match something). */
function faultIn(tree: FieldTree, kind: string, tokens: readonly string[]): string | undefined {
  let shapes: Shape[] = [tree.kinds[kind]!];
  const at: string[] = [];
  for (let i = 1; i < tokens.length; i++) {
    let token = tokens[i]!;
    // Scripts, parent (^), property names (~) and root references: not followed further.
    if (/^[(@~^$`]/.test(token)) return undefined;
    let from = shapes;
    const deep = token === '..';
    if (deep) {
      token = tokens[++i] ?? '*';
      // Any descendant, or a descent into a map the path names itself (`$.data..key`).
      if (/^[(@~^$`*?]/.test(token)) return undefined;
      if (shapes.some((s) => s === ANY || s.startsWith('{}'))) return undefined;
      // Map keys (labels, annotations, data) are data, not fields: `..name` is checked
      // against typed objects' field names only, else every kind has every name somewhere.
      from = [...descendants(tree, shapes)].filter((s) => s !== ANY && !s.startsWith('{}'));
    }
    if (from.includes(ANY)) return undefined;
    const next = from.flatMap((s) => step(tree, s, token) ?? []);
    if (next.length === 0) {
      const names = new Set(from.flatMap((s) => Object.keys(tree.types[s] ?? {})));
      const near = nearest(token, names);
      const where = at.length ? at.join('.') : 'the object';
      const lists = from.some((s) => s.startsWith('[]'));
      return deep
        ? `${kind} has no field ${JSON.stringify(token)} at any depth below ${where}`
        : lists
          ? `${kind}: ${where} is a list, select its items first (${where}[*].${token})`
          : `${kind} has no field ${[...at, token].join('.')}` +
            (near ? ` (did you mean ${[...at, near].join('.')}?)` : '');
    }
    if (!/^[*?]|^-?\d|:/.test(token)) at.push(token);
    shapes = [...new Set(next)];
  }
  return undefined;
}

/**
 * Why a syntactically valid path can match nothing in any of the given kinds (`match.kinds`
 * names), or undefined. Unknown kinds make it undefined: nothing to check against.
 */
export function pathFault(
  path: string,
  kinds: readonly string[],
  tree: FieldTree = BUILTIN_FIELDS,
): string | undefined {
  // `match.kinds` names a core kind "Pod" or "/Pod", others "apps/Deployment".
  const named = kinds.map((k) => k.replace(/^\//, ''));
  if (named.length === 0 || named.some((k) => !Object.hasOwn(tree.kinds, k))) return undefined;
  const tokens = JSONPath.toPathArray(path) as string[];
  const faults = named.map((k) => faultIn(tree, k, tokens));
  return faults.every((f) => f !== undefined) ? [...new Set(faults)].join('; ') : undefined;
}
