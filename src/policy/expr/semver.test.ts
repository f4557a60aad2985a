// The semver library. Errors and precedence were printed by a Go program over
// github.com/blang/semver/v4 v4.0.0 (the version the API server vendors).
import { describe, expect, it } from 'vitest';
import { compileExpression } from './rule.js';
import { compareSemver, normalizeSemver, parseSemver } from './semver.js';

const run = (text: string) => {
  const r = compileExpression(text, new Set()).run({});
  return (r as { message?: string })?.message ?? r;
};

describe('semver.Parse', () => {
  it.each([
    ['', 'Version string empty'],
    ['1.2', 'No Major.Minor.Patch elements found'],
    ['v1.2.3', 'Invalid character(s) found in major number "v1"'],
    ['01.2.3', 'Major number must not contain leading zeroes "01"'],
    ['1.02.3', 'Minor number must not contain leading zeroes "02"'],
    ['1.2.03', 'Patch number must not contain leading zeroes "03"'],
    ['1.2.3.4', 'Invalid character(s) found in patch number "3.4"'],
    ['1.2.3-01', 'Numeric PreRelease version must not contain leading zeroes "01"'],
    ['1.2.3-a..b', 'Prerelease is empty'],
    ['1.2.3+', 'Build meta data is empty'],
    ['1.2.3+b_c', 'Invalid character(s) found in build meta data "b_c"'],
    ['1.2.3-a_b', 'Invalid character(s) found in prerelease "a_b"'],
    ['1..3', 'strconv.ParseUint: parsing "": invalid syntax'],
    [
      '18446744073709551616.0.0',
      'strconv.ParseUint: parsing "18446744073709551616": value out of range',
    ],
  ])('refuses %j: %s', (s, msg) => {
    expect(() => parseSemver(s)).toThrow(msg);
  });

  it.each([
    ['1.2.3-alpha', '1.2.3', -1],
    ['1.2.3-alpha', '1.2.3-beta', -1],
    ['1.2.3-2', '1.2.3-10', -1],
    ['1.2.3-alpha', '1.2.3-1', 1],
    ['1.2.3-alpha', '1.2.3-alpha.1', -1],
    ['1.2.3+a', '1.2.3+b', 0],
    ['1.10.0', '1.9.0', 1],
    ['1.2.3-a-b', '1.2.3-a', 1],
  ])('%s vs %s: %i', (a, b, want) => {
    expect(compareSemver(parseSemver(a), parseSemver(b))).toBe(want);
  });

  it('normalizes as the library does', () => {
    expect(normalizeSemver('v1.02').minor).toBe(2n);
    expect(normalizeSemver('v01').major).toBe(1n);
    expect(() => normalizeSemver('1.2-rc')).toThrow(
      'short version cannot contain PreRelease/Build meta data',
    );
  });
});

describe('semver in CEL', () => {
  it.each([
    ["isSemver('1.2.3') && !isSemver('v1.2.3') && isSemver('v1.2', true)", true],
    ["semver('1.2.3-rc.1+b').major() + semver('1.2.3').minor() + semver('1.2.3').patch()", 6n],
    ["semver('18446744073709551615.0.0').major()", -1n],
    ["semver('1.2.3+a') == semver('1.2.3+b')", true],
    ["semver('1.2.3') != semver('1.2.3-rc')", true],
    ["semver('1.10.0').isGreaterThan(semver('1.9.0'))", true],
    ["semver('1.2.3-rc').isLessThan(semver('1.2.3'))", true],
    ["semver('v1', true).compareTo(semver('1.0.0'))", 0n],
    ["semver('v1', false)", 'No Major.Minor.Patch elements found'],
  ])('%s → %s', (text, want) => {
    expect(run(text)).toBe(want);
  });

  it('refuses the global-only functions called as methods', () => {
    expect(() => compileExpression("'1.2.3'.semver()", new Set())).toThrow(/no matching overload/);
  });
});
