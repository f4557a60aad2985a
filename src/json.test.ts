import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json.js';

const nested = (levels: number, leaf: unknown = 1, array = false): unknown => {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = array ? [v] : { a: v };
  return v;
};

describe('nestsDeeperThan', () => {
  it('counts maps and lists, the top level being 1', () => {
    expect(nestsDeeperThan(nested(3), 3)).toBe(false);
    expect(nestsDeeperThan(nested(4), 3)).toBe(true);
    expect(nestsDeeperThan(nested(4, 1, true), 3)).toBe(true);
    expect(nestsDeeperThan({ a: 1, b: [1, { c: [] }] }, 4)).toBe(false);
    expect(nestsDeeperThan({ a: 1, b: [1, { c: [] }] }, 3)).toBe(true);
    expect(nestsDeeperThan('x', 0)).toBe(false);
    expect(nestsDeeperThan(null, 0)).toBe(false);
  });

  it('finds the deep branch beside shallow ones, in maps and lists', () => {
    expect(nestsDeeperThan({ a: {}, b: [[], { c: nested(5) }] }, 6)).toBe(true);
    expect(nestsDeeperThan({ a: {}, b: [[], { c: nested(5) }] }, 8)).toBe(false);
  });

  it('does not overflow the stack on 100,000 levels', () => {
    expect(nestsDeeperThan(nested(100_000), 1000)).toBe(true);
    expect(nestsDeeperThan(nested(100_000, 1, true), 1000)).toBe(true);
  });
});
