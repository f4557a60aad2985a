// JSONPath for policy rules: a syntax check at compile time, and every match with its
// field path printed as apimachinery's field.Path prints it (`spec.containers[1].image`,
// `metadata.labels[app.kubernetes.io/name]`).
//
// jsonpath-plus evaluates the paths, but its parser accepts any text (`$.spec.[`, `foo
// bar` and `$.a[?(@.b ==` all "parse"), so checkPath walks the path's structure itself
// and hands filter and script expressions to jsonpath-plus' own expression parser (jsep,
// the one its safe evaluator runs).
import { JSONPath } from 'jsonpath-plus';

interface SafeScriptClass {
  new (code: string): { ast: unknown };
}
const SafeScript = (JSONPath.prototype as unknown as { safeVm: { Script: SafeScriptClass } }).safeVm
  .Script;

const SUBSCRIPT =
  /^\s*(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|\*|-?\d*\s*:\s*-?\d*(?:\s*:\s*-?\d+)?|-?\d+|[A-Za-z_$][\w$-]*)\s*$/;

function splitUnion(inner: string): string[] | undefined {
  const parts: string[] = [];
  let quote = '';
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === ',') {
      parts.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  if (quote) return undefined;
  parts.push(inner.slice(start));
  return parts;
}

/** The index of the `]` closing the `[` at `open`, skipping quotes and parentheses; -1 if none. */
function closing(path: string, open: number): number {
  let quote = '';
  let depth = 0;
  for (let i = open + 1; i < path.length; i++) {
    const c = path[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ']' && depth === 0) return i;
  }
  return -1;
}

function checkSubscript(inner: string): string | undefined {
  const t = inner.trim();
  if (t.startsWith('?(') || t.startsWith('(')) {
    if (!t.endsWith(')')) return `expression ${JSON.stringify(t)} is not closed with ")"`;
    // jsonpath-plus rewrites the @-names into sandbox variables before parsing (its _eval).
    const code = t
      .slice(t.startsWith('?') ? 2 : 1, -1)
      .replaceAll(/@(parentProperty|parent|property|root|path)/gu, '_$$_$1')
      .replaceAll(/@(?=[.\s)[]|$)/gu, '_$$_v');
    let ast: unknown;
    try {
      ast = new SafeScript(code).ast;
    } catch (e) {
      return `expression ${JSON.stringify(t)}: ${(e as Error).message}`;
    }
    // The safe evaluator still calls methods of the values (`@.name.match('(a+)+$')`,
    // `@.x.repeat(1e9)`), whose cost the object's author then picks: comparisons only.
    if (hasCall(ast)) return `expression ${JSON.stringify(t)}: calls are not allowed`;
    return undefined;
  }
  const parts = splitUnion(t);
  if (!parts) return `unterminated quote in [${inner}]`;
  const bad = parts.find((p) => !SUBSCRIPT.test(p));
  return bad === undefined ? undefined : `[${inner}] is not a key, index, slice, * or filter`;
}

/** Whether a jsep AST contains a call (any node of type CallExpression). */
function hasCall(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasCall);
  if (!isRecord(node)) return false;
  if (node.type === 'CallExpression') return true;
  return Object.values(node).some((v) => typeof v === 'object' && v !== null && hasCall(v));
}

/** Why `path` is not a JSONPath annex can evaluate, or undefined when it is one. */
export function checkPath(path: string): string | undefined {
  if (!path.startsWith('$')) return 'must start with "$" (the object\'s root)';
  let i = 1;
  while (i < path.length) {
    const c = path[i] ?? '';
    if (c === '[') {
      const end = closing(path, i);
      if (end < 0) return `"[" at character ${i + 1} is not closed`;
      const fault = checkSubscript(path.slice(i + 1, end));
      if (fault) return fault;
      i = end + 1;
    } else if (c === '.') {
      const descent = path[i + 1] === '.';
      i += descent ? 2 : 1;
      if (descent && path[i] === '[') continue;
      const name = /^[^.[\]\s^~]+/.exec(path.slice(i))?.[0];
      if (name === undefined) return `expected a property name at character ${i + 1}`;
      i += name.length;
    } else if (c === '^' || c === '~') {
      i++;
    } else {
      return `unexpected ${JSON.stringify(c)} at character ${i + 1}`;
    }
  }
  return undefined;
}

/** One value a path selects: where it is, and how Kubernetes would name its field. */
export interface PathMatch {
  value: unknown;
  /** `spec.template.spec.containers[1].image`; '' for the root. */
  field: string;
  /** The keys from the root: strings for map keys, numbers for array indexes. */
  segments: (string | number)[];
  /** The object or array holding the value (null for the root). */
  parent: Record<string, unknown> | unknown[] | null;
  key: string | number | null;
}

// Map-valued fields whose entries apimachinery names with .Key(): `resources.limits[cpu]`.
export const MAP_FIELDS: ReadonlySet<string> = new Set([
  'labels',
  'annotations',
  'data',
  'binaryData',
  'stringData',
  'nodeSelector',
  'matchLabels',
  'requests',
  'limits',
  'capacity',
  'allocatable',
  'hard',
  'used',
  'overhead',
]);
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** field.Path rendering of keys: `.child`, `[index]`, `[key]` for map entries. */
export function renderField(segments: readonly (string | number)[]): string {
  let out = '';
  let previous: string | number | undefined;
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if ((typeof previous === 'string' && MAP_FIELDS.has(previous)) || !IDENTIFIER.test(s)) {
      out += `[${s}]`;
    } else out += out === '' ? s : `.${s}`;
    previous = s;
  }
  return out;
}

/**
 * The field a path names when it matches nothing (for `required`): its segments rendered
 * as field.Path would; wildcards and filters print in brackets (`containers[*].image`).
 */
export function fieldOfPath(path: string): string {
  const segments = JSONPath.toPathArray(path).slice(1);
  return renderField(segments.map((s) => (/^\d+$/.test(s) ? Number(s) : s)));
}

/**
 * The keys a JSON Pointer (`/spec/containers/0`) walks from `root`, and the value it
 * reaches. Walking the object tells an array index from a map key that looks like one.
 */
export function walkPointer(
  root: unknown,
  pointer: string,
): { segments: (string | number)[]; value: unknown } {
  const segments: (string | number)[] = [];
  let cur = root;
  for (const raw of pointer === '' ? [] : pointer.slice(1).split('/')) {
    const k = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(cur) && /^\d+$/.test(k)) {
      segments.push(Number(k));
      cur = cur[Number(k)];
    } else if (Array.isArray(cur)) {
      segments.push(k); // `length`
      cur = (cur as unknown as Record<string, unknown>)[k];
    } else {
      segments.push(k);
      cur = isRecord(cur) ? cur[k] : undefined;
    }
  }
  return { segments, value: cur };
}

interface JsonPathAll {
  value: unknown;
  pointer: string;
  parent: unknown;
  parentProperty: string | number | null;
}

/** Every value `path` selects in `root`, by jsonpath-plus; throws what it throws. */
export function jsonPathMatches(path: string, root: object): PathMatch[] {
  const found = JSONPath({
    path,
    json: root,
    resultType: 'all',
    wrap: true,
    eval: 'safe',
    ignoreEvalErrors: false,
  }) as JsonPathAll[] | undefined;
  return (found ?? []).map((m) => {
    // The pointer is escaped, unlike jsonpath-plus' path string.
    const { segments } = walkPointer(root, m.pointer);
    const parent = Array.isArray(m.parent) || isRecord(m.parent) ? m.parent : null;
    return {
      value: m.value,
      field: renderField(segments),
      segments,
      parent,
      key: parent === null ? null : (segments.at(-1) ?? null),
    };
  });
}

// Most rule paths are plain steps — `.name`, `['key']`, `[0]`, `[*]`, `.*` — and named
// descents (`$..containers[*].image`): a direct walk answers them many times faster than
// jsonpath-plus' general machinery, with the same matches in the same order (a unit test
// compares the two). Each path is parsed once; a match's field is rendered only when read.
const DESCENT = Symbol('..');
type Step = string | number | '*' | typeof DESCENT;
const STEP = /^(?:\.([A-Za-z_][\w-]*)|\.\*|\[\*\]|\['([^'\\\]]*)'\]|\["([^"\\\]]*)"\]|\[(\d+)\])/;
/** A key jsonpath-plus follows as a plain property at every value a descent reaches. */
const DESCENT_KEY = /^[A-Za-z_][\w-]*$/;
const plainPaths = new Map<string, Step[] | null>();

function parseSteps(path: string): Step[] | null {
  const steps: Step[] = [];
  let rest = path.startsWith('$') ? path.slice(1) : '.';
  let descents = false;
  while (rest !== '') {
    if (rest.startsWith('..') && /^[[A-Za-z_*]/.test(rest.slice(2))) {
      // `..name`, `..*` go on as `.name`, `.*`; `..[*]` as `[*]`.
      steps.push(DESCENT);
      descents = true;
      rest = rest.slice(rest[2] === '[' ? 2 : 1);
      continue;
    }
    const m = STEP.exec(rest);
    if (!m) return null;
    const name = m[1] ?? m[2] ?? m[3];
    steps.push(name !== undefined ? name : m[4] !== undefined ? Number(m[4]) : '*');
    rest = rest.slice(m[0].length);
  }
  // A descent applies the steps after it to strings and numbers too, where jsonpath-plus
  // finds `length` and index keys of a string: those paths are left to it.
  if (
    descents &&
    steps.some(
      (s) =>
        s !== DESCENT &&
        s !== '*' &&
        (typeof s === 'number' || !DESCENT_KEY.test(s) || s === 'length'),
    )
  ) {
    return null;
  }
  return steps;
}

function plainSteps(path: string): Step[] | null {
  let steps = plainPaths.get(path);
  if (steps === undefined) {
    steps = parseSteps(path);
    plainPaths.set(path, steps);
  }
  return steps;
}

/** A match of the direct walk: its field rendered on first read (most rules never print it). */
class WalkMatch implements PathMatch {
  private rendered: string | undefined;

  constructor(
    public value: unknown,
    public segments: (string | number)[],
    public parent: Record<string, unknown> | unknown[] | null,
    public key: string | number | null,
  ) {}

  get field(): string {
    return (this.rendered ??= renderField(this.segments));
  }
}

/** An object or array a descent reaches, and how: its key in the node above. */
interface DescentNode {
  value: object;
  key: string | number | null;
  up: DescentNode | null;
}

/**
 * What a descent from one value reaches: every object and array under it (itself first)
 * in the order jsonpath-plus' `..` visits them — pre-order, children in key order — and,
 * by key, the objects holding that key, in the same order. A named descent then costs
 * its matches, not a walk of the whole object.
 */
interface DescentIndex {
  nodes: DescentNode[];
  byKey: Map<string, DescentNode[]>;
}

/**
 * The descent indexes built for the objects of one evaluation: the policies whose paths
 * descend into the same object walk it once. Only for objects not modified while it is in
 * use (evaluate.ts never modifies them: mutation is copy-on-write).
 */
export type DescentCache = WeakMap<object, DescentIndex>;

function indexOf(start: object, cache: DescentCache): DescentIndex {
  const index = cache.get(start);
  if (index) return index;
  const built: DescentIndex = { nodes: [], byKey: new Map() };
  const visit = (node: DescentNode) => {
    built.nodes.push(node);
    const v = node.value;
    if (Array.isArray(v)) {
      for (let k = 0; k < v.length; k++) {
        const c: unknown = v[k];
        if (typeof c === 'object' && c !== null) visit({ value: c, key: k, up: node });
      }
      return;
    }
    const keys = Object.keys(v);
    // Every key of this object before any of its children's: the lists stay in pre-order.
    for (const k of keys) {
      const holders = built.byKey.get(k);
      if (holders) holders.push(node);
      else built.byKey.set(k, [node]);
    }
    for (const k of keys) {
      const c = (v as Record<string, unknown>)[k];
      if (typeof c === 'object' && c !== null) visit({ value: c, key: k, up: node });
    }
  };
  visit({ value: start, key: null, up: null });
  cache.set(start, built);
  return built;
}

/** The keys from the descent's start to `node`. */
function keysTo(node: DescentNode): (string | number)[] {
  const keys: (string | number)[] = [];
  for (let n: DescentNode | null = node; n?.up; n = n.up) keys.push(n.key!);
  return keys.reverse();
}

/** Appends to `out` the matches of `steps[i..]` from `value` (at `path`, in `parent`). */
function walk(
  steps: readonly Step[],
  i: number,
  value: unknown,
  path: (string | number)[],
  parent: Record<string, unknown> | unknown[] | null,
  out: PathMatch[],
  cache: DescentCache,
): void {
  if (i === steps.length) {
    out.push(
      new WalkMatch(value, path.slice(), parent, parent === null ? null : (path.at(-1) ?? null)),
    );
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  const s = steps[i]!;
  const container = value as Record<string | number, unknown>;
  const at = (k: string | number, j: number) => {
    path.push(k);
    walk(steps, j, container[k], path, value as Record<string, unknown> | unknown[], out, cache);
    path.pop();
  };
  if (s === DESCENT) {
    // jsonpath-plus' `..`: the step after it here, then the descent into each child that
    // is an object or an array, in key order (it enters nulls too, where nothing
    // matches). A step after `..` is a name or `*` (parseSteps): a name matches only
    // at the objects holding it, `*` at every object and array.
    const index = indexOf(value, cache);
    const next = steps[i + 1]!;
    const reached = typeof next === 'string' && next !== '*' ? index.byKey.get(next) : index.nodes;
    for (const node of reached ?? []) {
      const keys = keysTo(node);
      path.push(...keys);
      walk(steps, i + 1, node.value, path, null, out, cache);
      path.length -= keys.length;
    }
  } else if (s === '*') {
    if (Array.isArray(value)) for (let k = 0; k < value.length; k++) at(k, i + 1);
    else for (const k of Object.keys(value)) at(k, i + 1);
  } else if (Object.hasOwn(container, s)) {
    // Index or key as walkPointer reports it: numbers in arrays, strings in objects.
    at(Array.isArray(value) && /^\d+$/.test(String(s)) ? Number(s) : String(s), i + 1);
  }
}

/**
 * Every value `path` selects in `root`; throws what jsonpath-plus throws (an evaluation
 * error). `cache`: the descent indexes of one evaluation (see DescentCache).
 */
export function matchesOf(
  path: string,
  root: object,
  cache: DescentCache = new WeakMap(),
): PathMatch[] {
  const steps = plainSteps(path);
  if (!steps) return jsonPathMatches(path, root);
  const out: PathMatch[] = [];
  walk(steps, 0, root, [], null, out, cache);
  return out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
