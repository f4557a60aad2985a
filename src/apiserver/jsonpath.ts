// JSONPath for Table cells and selectable fields. Declarations may write Kubernetes'
// style (`.status.cpu`, `{.status.cpu}`) or jsonpath-plus' (`$.status.cpu`). Plain
// dotted paths — nearly every column — compile to a property walk: a Table of 10,000
// rows would otherwise spend most of its time re-interpreting the same few paths.
import { JSONPath } from 'jsonpath-plus';

export type Evaluator = (obj: unknown) => unknown;

const cache = new Map<string, Evaluator>();

/** `{.a.b}` and `.a.b` → `$.a.b`. */
export function normalizePath(path: string): string {
  let p = path.trim();
  if (p.startsWith('{') && p.endsWith('}')) p = p.slice(1, -1).trim();
  if (p.startsWith('.') || p.startsWith('[')) p = `$${p}`;
  return p;
}

const SIMPLE = /^\$((?:\.[A-Za-z_][A-Za-z0-9_-]*|\[(?:'[^'\\]*'|"[^"\\]*"|\d+)\])*)$/;
const SEGMENT = /\.([A-Za-z_][A-Za-z0-9_-]*)|\['([^'\\]*)'\]|\["([^"\\]*)"\]|\[(\d+)\]/g;

function compileSimple(rest: string): Evaluator {
  const keys: (string | number)[] = [];
  for (const m of rest.matchAll(SEGMENT)) {
    const k = m[1] ?? m[2] ?? m[3];
    keys.push(k !== undefined ? k : Number(m[4]));
  }
  return (obj) => {
    let cur: unknown = obj;
    for (const k of keys) {
      if (cur === null || typeof cur !== 'object') return undefined;
      cur = (cur as Record<string | number, unknown>)[k];
    }
    return cur;
  };
}

/** The first value the path selects in `obj`, or undefined. Compiled once per path. */
export function compilePath(path: string): Evaluator {
  const hit = cache.get(path);
  if (hit) return hit;
  const norm = normalizePath(path);
  const simple = SIMPLE.exec(norm);
  const ev: Evaluator = simple
    ? compileSimple(simple[1]!)
    : (obj) => {
        const out = JSONPath({ path: norm, json: obj as object, wrap: true }) as unknown[];
        return out[0];
      };
  cache.set(path, ev);
  return ev;
}
