// The cost budget of one rule. The time budget (evaluate.ts) is checked between rules, and
// a timer cannot interrupt synchronous JavaScript, so one rule must not be able to run
// long by itself: before the work, what the rule will visit is counted — the nodes a
// general path walks (per descent or filter step, weighted by depth), then each match
// and every value and string character it holds, which a schema, pattern or name rule
// may read — and a rule over RULE_COST_BUDGET fails without running on (its policy's
// failurePolicy decides), as the API server stops CEL rules that run out of cost budget.
// Sizes are kept per object (all but small ones), so the many matches of `$..*` are
// counted in linear time.
import { matchesOf, type DescentCache, type PathMatch } from './paths.js';

/**
 * Values and string characters one rule may visit: a 3 MiB object (the API server's
 * limit) several times over, in well under a second; the quadratic cases (`$..*` on a
 * deep object, each match validated again) go past it.
 */
export const RULE_COST_BUDGET = 16 * 1024 * 1024;

/** What a rule over its cost budget reports. */
export const OUT_OF_COST = `not evaluated: the rule would run out of its cost budget (${RULE_COST_BUDGET}: nodes walked, values and characters matched); narrow its path`;

const sizes = new WeakMap<object, number>();
/**
 * Only larger values are kept: a small one is counted again, which costs less than keeping
 * it (a WeakMap entry per env var of a fresh review was most of the count's time), and at
 * most this much per value that reads it, so counting stays linear.
 */
const KEEP_SIZE = 256;
const KEEP_NODES = 64;

/** Values and string characters in `v` (one for each value, plus each string's length). */
export function sizeOf(v: unknown): number {
  if (typeof v === 'string') return 1 + v.length;
  if (v === null || typeof v !== 'object') return 1;
  const known = sizes.get(v);
  if (known !== undefined) return known;
  let n = 1;
  if (Array.isArray(v)) for (const x of v) n += sizeOf(x);
  else for (const [k, x] of Object.entries(v)) n += k.length + sizeOf(x);
  if (n >= KEEP_SIZE) sizes.set(v, n);
  return n;
}

/** Nodes (objects, arrays, scalars) under `v`, and the sum of their depths below it. */
interface Shape {
  nodes: number;
  depths: number;
}
const shapes = new WeakMap<object, Shape>();

function shapeOf(v: unknown): Shape {
  if (v === null || typeof v !== 'object') return { nodes: 1, depths: 0 };
  const known = shapes.get(v);
  if (known) return known;
  const shape = { nodes: 1, depths: 0 };
  for (const x of Array.isArray(v) ? v : Object.values(v)) {
    const c = shapeOf(x);
    shape.nodes += c.nodes;
    shape.depths += c.depths + c.nodes;
  }
  if (shape.nodes >= KEEP_NODES) shapes.set(v, shape);
  return shape;
}

// What jsonpath-plus and the field paths built for its matches cost, in the budget's units
// (about 60 ns each where measured): a descent visits a node in ~2 µs, plus ~0.5 µs per
// level of depth (it copies each node's path); a match costs ~30 µs, plus ~3 µs per level.
// A descent to `*` or a filter may match every node it visits, so it is charged the
// match's cost per node up front; a named descent (`$..image`) pays for its matches after.
const VISIT = { node: 32, depth: 8 };
const MATCH = { node: 512, depth: 56 };

/** Steps that walk more than one level: recursive descent and filters. */
const walkingSteps = (path: string) => (path.match(/\.\.|\[\s*\?\(/g) ?? []).length;
/** A step that may match whatever it walks: `..*`, `..[*]` or a filter. */
const matchesAnything = (path: string) => /\.\.(?:\*|\[\s*\*\s*\])|\[\s*\?\(/.test(path);

/** matchesOf within the budget; throws OUT_OF_COST before the work that would exceed it. */
export function matchesWithin(
  path: string,
  root: object,
  budget = RULE_COST_BUDGET,
  descents?: DescentCache,
): PathMatch[] {
  const walks = walkingSteps(path);
  let spent = 0;
  if (walks > 0) {
    const { nodes, depths } = shapeOf(root);
    const per = matchesAnything(path) ? MATCH : VISIT;
    spent = walks * (nodes * per.node + depths * per.depth);
    if (spent > budget) throw new Error(OUT_OF_COST);
  }
  const matches = matchesOf(path, root, descents);
  for (const m of matches) {
    // What the rule may read of each match: every value and character in it.
    spent += sizeOf(m.value) + (walks > 0 ? MATCH.node + MATCH.depth * m.segments.length : 0);
    if (spent > budget) throw new Error(OUT_OF_COST);
  }
  return matches;
}
