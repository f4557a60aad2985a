import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonErrorByte, jsonErrorIndex } from './json-error.js';

/** JSON.parse's verdict, and the position V8 names when its message has one. */
function v8(text: string): { ok: boolean; position?: number } {
  try {
    JSON.parse(text);
    return { ok: true };
  } catch (e) {
    const m = /at position (\d+)/.exec((e as Error).message);
    return m ? { ok: false, position: Number(m[1]) } : { ok: false };
  }
}

/** Near-JSON: JSON with some characters replaced, dropped or added. */
const nearJson = fc
  .tuple(
    fc.json({ maxDepth: 4 }),
    fc.array(
      fc.tuple(
        fc.nat(),
        fc.constantFrom(
          '',
          '"',
          '{',
          '}',
          '[',
          ']',
          ',',
          ':',
          '\\',
          '-',
          '.',
          'e',
          '0',
          ' ',
          '\n',
          'x',
          '\u0001',
          't',
        ),
      ),
      { maxLength: 3 },
    ),
  )
  .map(([json, edits]) =>
    edits.reduce((s, [at, ch]) => {
      const i = at % (s.length + 1);
      return `${s.slice(0, i)}${ch}${s.slice(i + (ch === '' ? 1 : 0))}`;
    }, json),
  );

describe('jsonErrorIndex', () => {
  it('agrees with JSON.parse on what is JSON, and on where it is not when V8 says', () => {
    fc.assert(
      fc.property(nearJson, (text) => {
        const want = v8(text);
        const got = jsonErrorIndex(text);
        expect(got === -1, text).toBe(want.ok);
        if (want.position !== undefined) expect(got, text).toBe(want.position);
      }),
      { numRuns: 5000 },
    );
  });

  it('finds the fault in the usual cases', () => {
    const cases: [string, number][] = [
      ['<html>', 0],
      ['', 0],
      ['   ', 3],
      ['{"a":1,}', 7],
      ['[1,2', 4],
      ['tru', 3],
      ['nul!', 3],
      ['01', 1],
      ['-', 1],
      ['1.', 2],
      ['1e+', 3],
      ['"a\\u12g4"', 6],
      ['"tab\there"', 4],
      ['{"a" 1}', 5],
      ['[1] x', 4],
      ['\uFEFF{}', 0],
      [' {"a": [1, {"b": null}, "x"]} ', -1],
    ];
    for (const [text, at] of cases) expect(jsonErrorIndex(text), JSON.stringify(text)).toBe(at);
  });

  it('counts bytes, and survives nesting no recursive parser would', () => {
    expect(jsonErrorByte('{"é": [1,]}')).toBe(10);
    const deep = '['.repeat(1_000_000);
    expect(jsonErrorIndex(deep)).toBe(1_000_000);
    expect(jsonErrorIndex(`${deep}${']'.repeat(1_000_000)}`)).toBe(-1);
  });
});
