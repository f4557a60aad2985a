// src/admission/patch.ts against fast-json-patch's compare(), which it replaced: the same
// operations in the same order, byte for byte, on generated pairs (an object and an edit
// of it, as a mutating handler makes, or two unrelated values), and applying them to the
// first gives the second.
import fc from 'fast-check';
import fastJsonPatch from 'fast-json-patch';
import { describe, expect, it } from 'vitest';
import { jsonPatch } from '../../../src/admission/patch.js';
import { options, runsOf, timeoutFor } from './fuzz.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

// Keys a pointer must escape, array-like keys, and plain ones.
const key = fc.constantFrom('a', 'b', 'a/b', '~', '~1', '0', '1', '', 'spec', 'x~/y');
const json: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom<Json>(null, true, false, 0, 1, 'x', ''),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(key, tie('v'), { maxKeys: 5 }),
  ),
})).v;
const map = fc.dictionary(key, json, { maxKeys: 6 });
const list = fc.array(json, { maxLength: 6 });
const root = fc.oneof(map, list);

/** An edit of `v` as a handler makes one: some nodes replaced, removed, added or set undefined. */
function edit(v: Json, choices: number[], i = { n: 0 }): unknown {
  const pick = () => choices[i.n++ % choices.length] ?? 0;
  if (v === null || typeof v !== 'object') return pick() % 5 === 0 ? 'changed' : v;
  if (Array.isArray(v)) {
    const out: unknown[] = v.map((e) => edit(e, choices, i));
    const c = pick() % 7;
    if (c === 0) out.pop();
    else if (c === 1) out.push({ added: [1] });
    else if (c === 2 && out.length) out[0] = undefined;
    return out;
  }
  const out: Record<string, unknown> = {};
  for (const [k, e] of Object.entries(v)) {
    const c = pick() % 9;
    if (c === 0) continue; // removed
    out[k] = c === 1 ? undefined : c === 2 ? [e] : edit(e, choices, i);
  }
  if (pick() % 4 === 0) out[`new/${pick() % 3}`] = { n: pick() };
  return out;
}

const sameOps = (before: object, after: object) => {
  const ops = jsonPatch(before, after);
  expect(JSON.stringify(ops)).toBe(JSON.stringify(fastJsonPatch.compare(before, after)));
  return ops;
};

/** The same operations, and they turn `before` into `after` (roots of one type, JSON only). */
const same = (before: object, after: object) => {
  const ops = sameOps(before, after);
  const applied = fastJsonPatch.applyPatch(
    structuredClone(before),
    structuredClone(ops),
  ).newDocument;
  expect(applied).toStrictEqual(JSON.parse(JSON.stringify(after))); // key order aside
};

const RUNS = runsOf(2000);

describe('jsonPatch is fast-json-patch compare(), op for op', () => {
  it('on an object and an edit of it', { timeout: timeoutFor(RUNS, 1) }, () => {
    fc.assert(
      fc.property(root, fc.array(fc.nat(), { minLength: 1, maxLength: 20 }), (before, choices) => {
        same(before, edit(before, choices) as object);
      }),
      options(RUNS),
    );
  });

  it('on two unrelated values', { timeout: timeoutFor(RUNS, 1) }, () => {
    fc.assert(
      fc.property(fc.oneof(fc.tuple(map, map), fc.tuple(list, list)), ([a, b]) => same(a, b)),
      options(RUNS),
    );
  });

  it('on what is not JSON yet (toJSON), a root of another type, a shared subtree', () => {
    const shared = { keep: [1, 2] };
    // compare() has no operation for these; the same none (or the same odd ones) here.
    sameOps({ a: 1 }, [1]);
    sameOps({ at: 'x', s: shared, d: { t: 1 } }, { at: new Date(0), s: shared, d: new Date(1) });
    expect(jsonPatch({ s: shared }, { s: shared })).toEqual([]);
    same({ a: [1, 2, 3] }, { a: [1, undefined, 3, 4] });
  });
});
