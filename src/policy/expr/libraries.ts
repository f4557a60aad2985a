// The Kubernetes CEL libraries annex evaluates in-process, beside CEL's standard ones that
// @bufbuild/cel brings. docs/policies.md lists which of v1.37's libraries are here and
// which are not; an expression calling one that is not is refused at compile time
// (expr/rule.ts) rather than failing, or worse passing, per object.
import {
  celFunc,
  celMethod,
  CelScalar,
  isCelList,
  listType,
  type CelFunc,
  type CelInput,
  type CelValue,
} from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { RE2JS } from 're2js';
import { cidr } from './cidr.js';
import { ip } from './ip.js';
import { quantity } from './quantity.js';
import { semver } from './semver.js';
import { url } from './url.js';

const DYN = CelScalar.DYN;
const LIST = listType(DYN);
const STR = CelScalar.STRING;

const items = (l: unknown): CelValue[] => (isCelList(l) ? [...l] : []) as CelValue[];

/** CEL's ordering over the scalar types lists' functions compare. */
function compare(a: CelValue, b: CelValue): number {
  for (const t of ['string', 'bigint', 'number'] as const) {
    if (typeof a === t && typeof b === t)
      return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
  }
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  throw new Error(`no such overload: compare ${typeof a} and ${typeof b}`);
}

function extreme(l: unknown, sign: number, name: string): CelInput {
  const xs = items(l);
  if (xs.length === 0) throw new Error(`${name} called on empty list`);
  return xs.reduce((m, x) => (compare(x, m) * sign > 0 ? x : m)) as CelInput;
}

const eq = (a: CelValue, b: CelValue) => a === b || compare(a, b) === 0;
const has = (l: unknown, x: CelValue) => items(l).some((y) => typeof y === typeof x && eq(x, y));

/** Kubernetes' lists library (k8s.io/apiserver/pkg/cel/library/lists.go). */
const lists: CelFunc[] = [
  celMethod('isSorted', LIST, [], CelScalar.BOOL, function () {
    const xs = items(this);
    return xs.every((x, i) => i === 0 || compare(xs[i - 1]!, x) <= 0);
  }),
  celMethod('sum', LIST, [], DYN, function () {
    const xs = items(this);
    if (xs.length === 0) return 0n;
    return xs.reduce((s, x) => (s as bigint) + (x as bigint)) as CelInput;
  }),
  celMethod('min', LIST, [], DYN, function () {
    return extreme(this, -1, 'min');
  }),
  celMethod('max', LIST, [], DYN, function () {
    return extreme(this, 1, 'max');
  }),
  celMethod('indexOf', LIST, [DYN], CelScalar.INT, function (x) {
    return BigInt(items(this).findIndex((y) => typeof y === typeof x && eq(x, y)));
  }),
  celMethod('lastIndexOf', LIST, [DYN], CelScalar.INT, function (x) {
    return BigInt(items(this).findLastIndex((y) => typeof y === typeof x && eq(x, y)));
  }),
];

/** CEL's patterns are RE2 (Go regexp) in the API server: re2js reads the same syntax, in linear time. */
export const re2 = {
  compile: (p: string) => ({ test: (s: string) => RE2JS.compile(p).matcher(s).find() }),
};

function findAll(s: string, p: string, limit: number): string[] {
  const m = RE2JS.compile(p).matcher(s);
  const out: string[] = [];
  while ((limit < 0 || out.length < limit) && m.find()) out.push(m.group() ?? '');
  return out;
}

/** Kubernetes' regex library (regex.go): find, findAll. */
const regex: CelFunc[] = [
  celMethod('find', STR, [STR], STR, function (p) {
    return findAll(this, p, 1)[0] ?? '';
  }),
  celMethod('findAll', STR, [STR], LIST, function (p) {
    return findAll(this, p, -1);
  }),
  celMethod('findAll', STR, [STR, CelScalar.INT], LIST, function (p, n) {
    return findAll(this, p, Number(n));
  }),
];

/** Kubernetes' sets library (sets.go): list arguments as sets. */
const sets: CelFunc[] = [
  celFunc('sets.contains', [LIST, LIST], CelScalar.BOOL, (a, b) =>
    items(b).every((x) => has(a, x)),
  ),
  celFunc(
    'sets.equivalent',
    [LIST, LIST],
    CelScalar.BOOL,
    (a, b) => items(b).every((x) => has(a, x)) && items(a).every((x) => has(b, x)),
  ),
  celFunc('sets.intersects', [LIST, LIST], CelScalar.BOOL, (a, b) =>
    items(b).some((x) => has(a, x)),
  ),
];

/** What annex implements, by library name (docs/policies.md lists the same). */
export const LIBRARIES = { strings, lists, regex, sets, quantity, ip, cidr, semver, url } as const;

export const FUNCS: CelFunc[] = Object.values(LIBRARIES).flat();

/**
 * Prefixes of namespaced functions (`sets.contains(…)`) in v1.37's libraries, and of the
 * cel-go extensions v1.37's VAP does not enable (math, base64), to name them when refused.
 */
export const NAMESPACES = new Set([
  'sets',
  'strings',
  'format',
  'lists',
  'math',
  'base64',
  'optional',
  'ip',
]);

/**
 * Functions the libraries declare as global only: `x.sign()` does not compile in the API
 * server (though quantity.go's comment shows it), so annex refuses it too.
 */
export const GLOBAL_ONLY = new Set([
  'quantity',
  'isQuantity',
  'sign',
  'isIP',
  'cidr',
  'isCIDR',
  'semver',
  'isSemver',
  'url',
  'isURL',
]);
