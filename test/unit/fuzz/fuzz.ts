// What every fuzz file shares: volume and seed, the hostile JSON values and text edits
// the inputs are made of (generated, or valid seeds mutated), and the properties every
// surface owes: it returns or throws its own documented error (a TypeError or RangeError
// from deep inside is a crash), no rejection goes unhandled, and no input reaches the
// built-in prototypes. `npm test` runs a reduced volume per surface; `npm run fuzz` sets
// ANNEX_FUZZ_RUNS (the inputs per surface) to the full one. ANNEX_FUZZ_SEED replays a run.
import fc from 'fast-check';
import { expect } from 'vitest';

export const SEED = Number(process.env.ANNEX_FUZZ_SEED ?? 8);
const FULL_RUNS = process.env.ANNEX_FUZZ_RUNS ? Number(process.env.ANNEX_FUZZ_RUNS) : undefined;

/** Inputs for one surface: the full volume when set, else this surface's share of `npm test`. */
export const runsOf = (reduced: number) => FULL_RUNS ?? reduced;

/**
 * A test timeout for `runs` inputs at about `msEach` apiece (CPU, unloaded), with room for
 * a shared machine, where a fuzz file may get a tenth of a core.
 */
export const timeoutFor = (runs: number, msEach: number) =>
  Math.max(60_000, Math.ceil(runs * msEach * 30));

export const options = (numRuns: number) => ({ numRuns, seed: SEED, endOnFailure: false });

/** Every value the fuzz puts in an object holds this: a log line must never carry it. */
export const MARK = 'SECRET-';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Keys that reach prototypes or shadow what code reads without thinking. */
export const POLLUTING_KEYS = ['__proto__', 'constructor', 'prototype'] as const;
export const awkwardKey = fc.constantFrom(
  ...POLLUTING_KEYS,
  'toString',
  'valueOf',
  'hasOwnProperty',
  'name',
  'labels',
  'metadata',
  'spec',
  'containers',
  'template',
  'length',
  '',
);

/** Hard strings: NUL, lone surrogates, astral characters, RTL marks, a long run. */
const unicode = fc.constantFrom('\u0000', '\ud800', '\udfff', '𝄞', '\u202e', 'é', '\uffff', '😀');
const marked = fc.string({ maxLength: 12 }).map((s) => `${MARK}${s}`);
const scalar: fc.Arbitrary<Json> = fc.oneof(
  marked,
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => `${MARK}${s}`),
  unicode.map((u) => `${MARK}${u}`),
  fc.integer(),
  fc.constantFrom(-0, 2 ** 53, -(2 ** 63), 1e308, 5e-324, 0.1),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.nat({ max: 4000 }).map((n) => `${MARK}${'Ab_é\t'.repeat(n)}`),
);

/**
 * Stands for a value nested `levels` deep, written into the JSON text by `expandDeep`
 * (JSON.stringify itself gives up at a few thousand levels).
 */
const DEEP = '\u0000deep\u0000';

/** A hostile JSON value: scalars of every type, maps with awkward keys, lists, deep nesting. */
export const value: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: scalar },
  {
    weight: 3,
    arbitrary: fc.dictionary(fc.oneof(awkwardKey, marked), scalar, {
      maxKeys: 4,
    }) as fc.Arbitrary<Json>,
  },
  { weight: 2, arbitrary: fc.array(scalar, { maxLength: 4 }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(100, 999, 1001, 3200, 6000, 20_000)
      .chain((n) => fc.constantFrom(`${DEEP}{${n}`, `${DEEP}[${n}`)),
  },
);

/** One change to a JSON document: walk `steps` from a start, then act there with `values`. */
export const mutationOf = (values: fc.Arbitrary<Json>) =>
  fc.record({
    // Mostly inside the start; one change in five anywhere in the document.
    fromRoot: fc.oneof(
      { weight: 1, arbitrary: fc.constant(true) },
      { weight: 4, arbitrary: fc.constant(false) },
    ),
    steps: fc.array(fc.nat(), { maxLength: 7 }),
    action: fc.oneof(
      fc.record({ kind: fc.constant('set' as const), value: values }),
      fc.record({ kind: fc.constant('delete' as const) }),
      // An own property, as JSON.parse makes it: `__proto__` included.
      fc.record({
        kind: fc.constant('add' as const),
        key: fc.oneof(awkwardKey, marked),
        value: values,
      }),
    ),
  });
export const mutation = mutationOf(value);
export type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

// `any`: the walk indexes maps and lists alike.
export const isContainer = (v: unknown): v is any => typeof v === 'object' && v !== null;

/**
 * Applies `m` to the document under `root`: from `root[rootKey]` when m.fromRoot, else
 * from `start[startKey]` (the object under review, say).
 */
export function mutate(
  root: any,
  rootKey: string,
  start: any,
  startKey: string,
  m: Mutation,
): void {
  let parent: any = m.fromRoot ? root : start;
  if (!isContainer(parent)) return;
  let key: string | number = m.fromRoot ? rootKey : startKey;
  for (const step of m.steps) {
    const here: unknown = parent[key];
    if (!isContainer(here)) break;
    const keys: (string | number)[] = Array.isArray(here)
      ? here.map((_, i) => i)
      : Object.keys(here);
    if (!keys.length) break;
    parent = here;
    key = keys[step % keys.length]!;
  }
  const a = m.action;
  // A copy: fast-check may hand the same value to two mutations, and a cycle is no JSON.
  const v = a.kind === 'delete' ? undefined : structuredClone(a.value);
  if (a.kind === 'set') parent[key] = v;
  else if (a.kind === 'delete') {
    if (Array.isArray(parent)) parent.splice(Number(key), 1);
    else delete parent[key];
  } else {
    const here: unknown = parent[key];
    if (isContainer(here) && !Array.isArray(here))
      Object.defineProperty(here, a.key, {
        value: v,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    else parent[key] = v;
  }
}

/** JSON text with every DEEP stand-in written out as real nesting. */
export function expandDeep(text: string): string {
  return text.replace(/"\\u0000deep\\u0000([{[])(\d+)"/g, (_, open, n) => {
    const levels = Number(n);
    return open === '{'
      ? '{"a":'.repeat(levels) + `"${MARK}deep"` + '}'.repeat(levels)
      : '['.repeat(levels) + `"${MARK}deep"` + ']'.repeat(levels);
  });
}

/** One review in 20 cut short (no longer JSON): the character to cut at, or null. */
export const truncation = fc.oneof(
  { weight: 19, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.nat() },
);
export const truncate = (text: string, at: number | null) =>
  at === null ? text : text.slice(0, at % (text.length + 1));

// ---- text surfaces (selectors, tokens, metrics, YAML, PEM) ----

/** Fragments every text parser meets in hostile input, beside its own grammar's. */
const HOSTILE_TEXT = [
  ...POLLUTING_KEYS,
  '\u0000',
  '\ud800',
  '𝄞',
  '\u202e',
  '\r\n',
  '\n',
  '\t',
  ' ',
  '"',
  "'",
  '\\',
  '%00',
  '{',
  '}',
  '[',
  ']',
  '-1',
  '1e999',
  'NaN',
];

/** One edit of a text: a character flipped, a slice deleted or repeated, a fragment put in, a cut. */
const edit = (fragments: readonly string[]) =>
  fc.oneof(
    fc.record({
      kind: fc.constant('flip' as const),
      at: fc.nat(),
      to: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
    }),
    fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.nat({ max: 40 }) }),
    fc.record({
      kind: fc.constant('repeat' as const),
      at: fc.nat(),
      length: fc.nat({ max: 40 }),
      times: fc.integer({ min: 2, max: 50 }),
    }),
    fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      text: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(...fragments, ...HOSTILE_TEXT) },
        { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
        // A huge one, now and then.
        { weight: 1, arbitrary: fc.constantFrom(1_000, 70_000).map((n) => 'a'.repeat(n)) },
      ),
    }),
    fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  );
type Edit = typeof edit extends (f: readonly string[]) => fc.Arbitrary<infer T> ? T : never;

function applyEdit(text: string, e: Edit): string {
  const at = e.at % (text.length + 1);
  switch (e.kind) {
    case 'flip':
      return text.slice(0, at) + e.to + text.slice(at + 1);
    case 'delete':
      return text.slice(0, at) + text.slice(at + e.length);
    case 'repeat':
      return text.slice(0, at) + text.slice(at, at + e.length).repeat(e.times) + text.slice(at);
    case 'insert':
      return text.slice(0, at) + e.text + text.slice(at);
    case 'cut':
      return text.slice(0, at);
  }
}

/**
 * Text inputs for a parser: mostly valid `seeds` with 1–4 edits, the rest generated from
 * the grammar's `fragments` (and hostile ones) strung together.
 */
export function textInputs(seeds: readonly string[], fragments: readonly string[]) {
  const mutated = fc
    .tuple(fc.constantFrom(...seeds), fc.array(edit(fragments), { minLength: 1, maxLength: 4 }))
    .map(([seed, edits]) => edits.reduce(applyEdit, seed));
  const generated = fc
    .array(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...fragments) },
        { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_TEXT) },
        { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
      ),
      { maxLength: 30 },
    )
    .map((parts) => parts.join(''));
  return fc.oneof({ weight: 3, arbitrary: mutated }, { weight: 1, arbitrary: generated });
}

// ---- the properties ----

type ErrorClass = abstract new (...args: any[]) => Error;

/**
 * Runs `parse`: a value, or the surface's own error. Anything else (a TypeError from deep
 * inside, a RangeError from recursion) fails the property, with the input in the message.
 */
export function returnsOrRefuses<T>(
  parse: () => T,
  documented: ErrorClass,
  tally: { ok: number; refused: number },
): T | undefined {
  try {
    const out = parse();
    tally.ok++;
    return out;
  } catch (e) {
    if (!(e instanceof documented)) throw e;
    expect((e as Error).message.length).toBeGreaterThan(0);
    tally.refused++;
    return undefined;
  }
}

/** Cheap enough for every input: nothing enumerable was added to Object.prototype. */
export function expectUnpolluted(): void {
  for (const k in {}) throw new Error(`Object.prototype polluted with "${k}"`);
}

const PROTOTYPES = [Object.prototype, Array.prototype, Function.prototype, String.prototype];

/** Every own property of the built-in prototypes, so that a change to any shows. */
function prototypeState(): string[] {
  return PROTOTYPES.map((p) =>
    Reflect.ownKeys(p)
      .map((k) => `${String(k)}:${typeof Object.getOwnPropertyDescriptor(p, k)?.value}`)
      .join(','),
  );
}

/**
 * Watches one fuzz run: the prototypes are the same at the end as at the start, and no
 * promise was rejected without a handler meanwhile.
 */
export function guard(): { check(): void } {
  const before = prototypeState();
  const rejections: unknown[] = [];
  const onRejection = (reason: unknown) => rejections.push(reason);
  process.on('unhandledRejection', onRejection);
  return {
    check() {
      process.off('unhandledRejection', onRejection);
      expect(rejections).toEqual([]);
      expect(prototypeState()).toEqual(before);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    },
  };
}
