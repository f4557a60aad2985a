import { describe, expect, it } from 'vitest';
import { sameJson } from './same-json.js';

describe('sameJson', () => {
  const cases: [unknown, unknown][] = [
    [
      { a: 1, b: [1, { c: 'x' }] },
      { a: 1, b: [1, { c: 'x' }] },
    ],
    [
      { a: 1, b: 2 },
      { b: 2, a: 1 },
    ],
    [{ a: 1 }, { a: 1, b: 2 }],
    [{ a: [1, 2] }, { a: [1, 2, 3] }],
    [{ a: null }, { a: {} }],
    [[], {}],
    ['1', 1],
    [{ a: { b: 'x' } }, { a: { b: 'y' } }],
  ];
  it.each(cases)('agrees with comparing JSON.stringify: %j vs %j', (a, b) => {
    expect(sameJson(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
  });
});
