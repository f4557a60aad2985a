import { describe, expect, it } from 'vitest';
import { cloneJson, nestsDeeperThan } from './json.js';

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

describe('cloneJson', () => {
  it('copies every level, keeping key order, types and values', () => {
    const v = JSON.parse(
      '{"b":[1,{"c":null,"d":[true,"x",1.5]}],"a":{"e":{}},"3":"n","f":[]}',
    ) as Record<string, unknown>;
    const c = cloneJson(v);
    expect(JSON.stringify(c)).toBe(JSON.stringify(v));
    expect(Object.keys(c)).toEqual(Object.keys(v));
    expect(c).toStrictEqual(structuredClone(v));
    expect(c.b).not.toBe(v.b);
    expect((c.b as unknown[])[1]).not.toBe((v.b as unknown[])[1]);
    expect(c.a).not.toBe(v.a);
  });

  it('keeps a "__proto__" key an own property, never the prototype', () => {
    const v = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
    const c = cloneJson(v);
    expect(Object.getPrototypeOf(c)).toBe(Object.prototype);
    expect(Object.keys(c)).toEqual(['__proto__', 'a']);
    expect((c as { polluted?: boolean }).polluted).toBeUndefined();
    expect(JSON.stringify(c)).toBe('{"__proto__":{"polluted":true},"a":1}');
  });
});
