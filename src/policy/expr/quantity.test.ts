// The quantity library against resource.Quantity: the expected values were printed by a
// Go program over k8s.io/apimachinery v0.37.2 (AsInt64, AsApproximateFloat64, Add, Cmp).
import { describe, expect, it } from 'vitest';
import { compileExpression } from './rule.js';
import { add, asFloat, asInt64, cmp, parseQuantity, sub } from './quantity.js';

/** A float64 from its bits, as the Go program printed them. */
const f64 = (hex: string) => Buffer.from(hex, 'hex').readDoubleBE();

const run = (text: string, bindings: Record<string, unknown> = {}) =>
  compileExpression(text, new Set()).run(bindings);

describe('parseQuantity', () => {
  it.each([
    ['0', 0n, 0],
    ['1', 1n, 1],
    ['+1', 1n, 1],
    ['1k', 1000n, 1000],
    ['1Ki', 1024n, 1024],
    ['1E3', 1000n, 1000],
    ['1e+0', 1n, 1],
    ['-', 0n, 0],
    ['.', 0n, 0],
    ['.Ki', 0n, 0],
    ['123456789012345678', 123456789012345678n, 123456789012345680],
    // int32(4294967296) is 0: the exponent wraps as in Go.
    ['1e4294967296', 1n, 1],
  ])('%s is the integer %s', (s, i, f) => {
    const q = parseQuantity(s);
    expect(asInt64(q)).toBe(i);
    expect(asFloat(q)).toBe(f);
  });

  it.each([
    ['1000m', 1],
    ['1.0', 1],
    ['0.5', 0.5],
    ['1.5Ki', 1536],
    ['1Ei', 1152921504606846976],
    ['9Ei', 2 ** 63],
    ['10Ei', 2 ** 63],
    ['1e-3', 0.001],
    ['1e-10', 1e-9],
    ['1.1234567891n', 2e-9],
    ['0e-10', 0],
    ['1e19', f64('43e158e460913d00')],
    ['1234567890123456789', f64('43b12210f47de982')],
    ['1e400', Infinity],
    ['1e-400', 1e-9],
    ['-1e-12', -1e-9],
  ])('%s is no int64 integer, ≈ %s', (s, f) => {
    const q = parseQuantity(s);
    expect(asInt64(q)).toBeUndefined();
    expect(asFloat(q)).toBe(f);
  });

  it('multiplies its own digits for asApproximateFloat, as Go does', () => {
    expect(asFloat(parseQuantity('3.3'))).toBe(33 * 0.1);
    expect(asFloat(parseQuantity('0.3'))).toBe(0.30000000000000004);
    expect(asFloat(parseQuantity('123.456e-7'))).toBe(f64('3ee9e43551cf0844'));
  });

  const FORMAT =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  const SUFFIX = "unable to parse quantity's suffix";
  it.each([
    ['', FORMAT],
    ['abc', FORMAT],
    ['1x', FORMAT],
    [' 1', FORMAT],
    ['1 ', FORMAT],
    ['1.2.3', FORMAT],
    ['1_000', FORMAT],
    ['0x10', FORMAT],
    ['１', FORMAT],
    ['1e', SUFFIX],
    ['1e+', SUFFIX],
    ['1Ki5', SUFFIX],
    ['1kk', SUFFIX],
    ['1ki', SUFFIX],
    ['1i', SUFFIX],
    ['1e99999999999999999999', SUFFIX],
    ['.e-10', 'unable to parse numeric part of quantity'],
  ])('refuses %j: %s', (s, msg) => {
    expect(() => parseQuantity(s)).toThrow(msg);
  });
});

describe('arithmetic', () => {
  const q = parseQuantity;
  it('adds in int64 while it fits, then exactly', () => {
    expect(asInt64(add(q('1'), q('1k')))).toBe(1001n);
    expect(asInt64(add(q('1'), q('1000m')))).toBeUndefined();
    expect(asFloat(add(q('1'), q('1000m')))).toBe(2);
    const big = add(q('9223372036854775807'), q('1'));
    expect(asInt64(big)).toBeUndefined();
    expect(asFloat(big)).toBe(9223372036854775808);
    expect(asInt64(sub(q('-9223372036854775807'), q('2')))).toBeUndefined();
    expect(asFloat(sub(q('3.3'), q('0.3')))).toBe(3);
  });
  it('compares exactly, however far apart the exponents', () => {
    expect(cmp(q('1'), q('1000m'))).toBe(0);
    expect(cmp(q('1e100'), q('1'))).toBe(1);
    expect(cmp(q('1n'), q('1e-10'))).toBe(0);
    expect(cmp(q('1Ki'), q('1k'))).toBe(1);
    expect(cmp(q('-1'), q('1'))).toBe(-1);
  });
});

describe('the quantity library in CEL', () => {
  it.each([
    ["quantity('1') == quantity('1000m')", true],
    ["quantity('1Ki') == quantity('1024')", true],
    ["quantity('1Ki') != quantity('1k')", true],
    ["[quantity('1')].exists(x, x == quantity('1.0'))", true],
    ["isQuantity('1Gi') && !isQuantity('1GB')", true],
    ["sign(quantity('-1m'))", -1n],
    ["sign(quantity('0'))", 0n],
    ["quantity('1').isGreaterThan(quantity('999m'))", true],
    ["quantity('1').isLessThan(quantity('1001m'))", true],
    ["quantity('1k').compareTo(quantity('1Ki'))", -1n],
    ["quantity('1k').asInteger()", 1000n],
    ["quantity('1500m').isInteger()", false],
    ["quantity('1.5Ki').isInteger()", false],
    ["quantity('1.5').asApproximateFloat()", 1.5],
    ["quantity('1').add(quantity('500m')) == quantity('1.5')", true],
    ["quantity('1').add(2).asInteger()", 3n],
    ["quantity('1').sub(quantity('2')).asInteger()", -1n],
    ["quantity('10').sub(3).asInteger()", 7n],
  ])('%s → %s', (text, want) => {
    expect(run(text)).toBe(want);
  });

  it('fails with the API server words', () => {
    expect(String((run("quantity('1kk')") as Error).message)).toBe(
      "unable to parse quantity's suffix",
    );
    expect(String((run("quantity('500m').asInteger()") as Error).message)).toBe(
      'cannot convert value to integer',
    );
  });

  it("turns a compared quantity into an inf.Dec, as Go's Cmp does", () => {
    expect(
      run(
        "[quantity('1')].all(q, q.isInteger()) && [quantity('1')].all(q, q.compareTo(quantity('1.5Ki')) < 0 && !q.isInteger())",
      ),
    ).toBe(true);
  });

  it('refuses the global-only functions called as methods', () => {
    expect(() => compileExpression("quantity('1').sign() == 1", new Set())).toThrow(
      /no matching overload for 'sign'/,
    );
  });
});
