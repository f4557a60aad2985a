// Kubernetes' semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go, version 1: with
// the `normalize` argument) over a port of github.com/blang/semver/v4's Parse, its errors and
// its precedence (Compare; `==` ignores build metadata, as Version.EQ does).
import { celFunc, celMethod, CelScalar } from '@bufbuild/cel';
import { goQuote } from './netip.js';
import { opaqueType } from './opaque.js';

interface PR {
  num?: bigint;
  str: string;
}

export interface Version {
  major: bigint;
  minor: bigint;
  patch: bigint;
  pre: PR[];
  build: string[];
}

const NUMBERS = /^[0-9]*$/;
const ALPHANUM = /^[a-zA-Z0-9-]*$/;
const leadingZero = (s: string) => s.length > 1 && s[0] === '0';

/** strconv.ParseUint(s, 10, 64) and its NumError text. */
function parseUint(s: string): bigint {
  const fail = (why: string) => new Error(`strconv.ParseUint: parsing ${goQuote(s)}: ${why}`);
  if (!/^[0-9]+$/.test(s)) throw fail('invalid syntax');
  const n = BigInt(s);
  if (n >= 1n << 64n) throw fail('value out of range');
  return n;
}

/** semver.Parse. */
export function parseSemver(s: string): Version {
  if (s.length === 0) throw new Error('Version string empty');
  const dot1 = s.indexOf('.');
  const dot2 = dot1 < 0 ? -1 : s.indexOf('.', dot1 + 1);
  if (dot2 < 0) throw new Error('No Major.Minor.Patch elements found');
  const number = (part: string, what: string) => {
    if (!NUMBERS.test(part))
      throw new Error(`Invalid character(s) found in ${what} number ${goQuote(part)}`);
    if (leadingZero(part)) {
      const W = what[0]!.toUpperCase() + what.slice(1);
      throw new Error(`${W} number must not contain leading zeroes ${goQuote(part)}`);
    }
    return parseUint(part);
  };
  const major = number(s.slice(0, dot1), 'major');
  const minor = number(s.slice(dot1 + 1, dot2), 'minor');
  let patchStr = s.slice(dot2 + 1);
  let build: string[] = [];
  let prerelease: string[] = [];
  const plus = patchStr.indexOf('+');
  if (plus !== -1) {
    build = patchStr.slice(plus + 1).split('.');
    patchStr = patchStr.slice(0, plus);
  }
  const dash = patchStr.indexOf('-');
  if (dash !== -1) {
    prerelease = patchStr.slice(dash + 1).split('.');
    patchStr = patchStr.slice(0, dash);
  }
  const patch = number(patchStr, 'patch');
  const pre = prerelease.map((p): PR => {
    if (p.length === 0) throw new Error('Prerelease is empty');
    if (NUMBERS.test(p)) {
      if (leadingZero(p))
        throw new Error(`Numeric PreRelease version must not contain leading zeroes ${goQuote(p)}`);
      return { num: parseUint(p), str: p };
    }
    if (ALPHANUM.test(p)) return { str: p };
    throw new Error(`Invalid character(s) found in prerelease ${goQuote(p)}`);
  });
  for (const b of build) {
    if (b.length === 0) throw new Error('Build meta data is empty');
    if (!ALPHANUM.test(b))
      throw new Error(`Invalid character(s) found in build meta data ${goQuote(b)}`);
  }
  return { major, minor, patch, pre, build };
}

/** The library's normalizeAndParse: no `v`, no leading zeros, missing minor/patch as 0. */
export function normalizeSemver(s: string): Version {
  if (s.startsWith('v')) s = s.slice(1);
  const dot1 = s.indexOf('.');
  const dot2 = dot1 < 0 ? -1 : s.indexOf('.', dot1 + 1);
  const parts =
    dot1 < 0
      ? [s]
      : dot2 < 0
        ? [s.slice(0, dot1), s.slice(dot1 + 1)]
        : [s.slice(0, dot1), s.slice(dot1 + 1, dot2), s.slice(dot2 + 1)];
  const trimmed = parts.map((p) => {
    if (p.length <= 1) return p;
    const t = p.replace(/^0+/, '');
    return t.length === 0 || !/[0-9]/.test(t[0]!) ? `0${t}` : t;
  });
  if (trimmed.length < 3) {
    if (/[+-]/.test(trimmed[trimmed.length - 1]!))
      throw new Error('short version cannot contain PreRelease/Build meta data');
    while (trimmed.length < 3) trimmed.push('0');
  }
  return parseSemver(trimmed.join('.'));
}

const sign = (a: bigint, b: bigint) => (a > b ? 1 : a < b ? -1 : 0);

/** Version.Compare: semver precedence (build metadata ignored). */
export function compareSemver(v: Version, o: Version): number {
  const c = sign(v.major, o.major) || sign(v.minor, o.minor) || sign(v.patch, o.patch);
  if (c) return c;
  if (v.pre.length === 0 || o.pre.length === 0)
    return sign(BigInt(o.pre.length), BigInt(v.pre.length));
  for (let i = 0; i < v.pre.length && i < o.pre.length; i++) {
    const a = v.pre[i]!;
    const b = o.pre[i]!;
    const d =
      a.num !== undefined && b.num !== undefined
        ? sign(a.num, b.num)
        : a.num !== undefined
          ? -1
          : b.num !== undefined
            ? 1
            : a.str > b.str
              ? 1
              : a.str < b.str
                ? -1
                : 0;
    if (d) return d;
  }
  return sign(BigInt(v.pre.length), BigInt(o.pre.length));
}

const S = opaqueType<Version>('kubernetes.Semver');
const key = (v: Version) =>
  `${v.major}.${v.minor}.${v.patch}${v.pre.length ? `-${v.pre.map((p) => p.str).join('.')}` : ''}`;
const wrap = (v: Version) => S.wrap(v, key(v));
const { BOOL, INT, STRING } = CelScalar;
const valid = (f: () => unknown) => {
  try {
    f();
    return true;
  } catch {
    return false;
  }
};
/** Go's int64(uint64): the library returns types.Int(v.Major). */
const toInt = (n: bigint) => BigInt.asIntN(64, n);

export const semver = [
  celFunc('semver', [STRING], S.type, (s) => wrap(parseSemver(s))),
  celFunc('semver', [STRING, BOOL], S.type, (s, n) =>
    wrap(n ? normalizeSemver(s) : parseSemver(s)),
  ),
  celFunc('isSemver', [STRING], BOOL, (s) => valid(() => parseSemver(s))),
  celFunc('isSemver', [STRING, BOOL], BOOL, (s, n) =>
    valid(() => (n ? normalizeSemver(s) : parseSemver(s))),
  ),
  celMethod('isGreaterThan', S.type, [S.type], BOOL, function (o) {
    return compareSemver(S.unwrap(this), S.unwrap(o)) === 1;
  }),
  celMethod('isLessThan', S.type, [S.type], BOOL, function (o) {
    return compareSemver(S.unwrap(this), S.unwrap(o)) === -1;
  }),
  celMethod('compareTo', S.type, [S.type], INT, function (o) {
    return BigInt(compareSemver(S.unwrap(this), S.unwrap(o)));
  }),
  celMethod('major', S.type, [], INT, function () {
    return toInt(S.unwrap(this).major);
  }),
  celMethod('minor', S.type, [], INT, function () {
    return toInt(S.unwrap(this).minor);
  }),
  celMethod('patch', S.type, [], INT, function () {
    return toInt(S.unwrap(this).patch);
  }),
];
