// Kubernetes' quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go) over a port
// of resource.ParseQuantity and the Quantity arithmetic it uses (k8s.io/apimachinery
// pkg/api/resource). A Quantity is v × 10^exp in one of Go's two representations: an
// int64Amount (`int`, v fits int64) or an inf.Dec (`dec`). The representation shows:
// isInteger()/asInteger() are false/an error for any dec (`1.5Ki`, `1e-10`), and
// asApproximateFloat() multiplies the representation's own digits.
import { celFunc, celMethod, CelScalar } from '@bufbuild/cel';
import { opaqueType } from './opaque.js';

export interface Qty {
  dec: boolean;
  v: bigint;
  exp: number;
}

const FORMAT =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const NUMERIC = 'unable to parse numeric part of quantity';
const SUFFIX = "unable to parse quantity's suffix";

const MAX = (1n << 63n) - 1n;
const MIN = -(1n << 63n);
const i64 = (x: bigint) => BigInt.asIntN(64, x);
const i32 = (x: number) => x | 0;
const fits = (x: bigint) => x >= MIN && x <= MAX;
const pow10 = (n: number) => 10n ** BigInt(n);
const isDigit = (ch: string | undefined) => ch !== undefined && ch >= '0' && ch <= '9';

interface Parts {
  positive: boolean;
  value: string;
  num: string;
  denom: string;
  suffix: string;
}

/** parseQuantityString: sign, numerator (leading zeros stripped), denominator, suffix. */
function split(str: string): Parts {
  const p: Parts = { positive: true, value: '', num: '', denom: '', suffix: '' };
  const end = str.length;
  let pos = 0;
  if (str[0] === '-') {
    p.positive = false;
    pos++;
  } else if (str[0] === '+') pos++;
  while (pos < end && str[pos] === '0') pos++;
  if (pos >= end) {
    p.num = p.value = '0';
    return p;
  }
  let i = pos;
  while (i < end && isDigit(str[i])) i++;
  if (i >= end) {
    p.num = str.slice(pos);
    p.value = str;
    return p;
  }
  p.num = str.slice(pos, i) || '0';
  pos = i;
  if (str[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(str[i])) i++;
    p.denom = str.slice(pos, i);
    if (i >= end) {
      p.value = str;
      return p;
    }
    pos = i;
  }
  p.value = str.slice(0, pos);
  const suffixStart = pos;
  while (pos < end && 'eEinumkKMGTP'.includes(str[pos]!)) pos++;
  if (pos < end && (str[pos] === '-' || str[pos] === '+')) pos++;
  while (pos < end && isDigit(str[pos])) pos++;
  if (pos < end) throw new Error(FORMAT);
  p.suffix = str.slice(suffixStart);
  return p;
}

const DECIMAL: Record<string, number> = {
  '': 0,
  n: -9,
  u: -6,
  m: -3,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const BINARY: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };

/** The suffix's base, exponent and whether it is binary (BinarySI). */
function interpret(s: string): { base: 2 | 10; exponent: number } {
  if (Object.hasOwn(DECIMAL, s)) return { base: 10, exponent: DECIMAL[s]! };
  if (Object.hasOwn(BINARY, s)) return { base: 2, exponent: BINARY[s]! };
  if (s.length > 1 && (s[0] === 'e' || s[0] === 'E') && /^[+-]?[0-9]+$/.test(s.slice(1))) {
    const n = BigInt(s.slice(1)); // strconv.ParseInt(…, 10, 64), then int32()
    if (fits(n)) return { base: 10, exponent: Number(BigInt.asIntN(32, n)) };
  }
  throw new Error(SUFFIX);
}

/** resource.ParseQuantity; throws with its error's words. */
export function parseQuantity(str: string): Qty {
  if (str.length === 0) throw new Error(FORMAT);
  if (str === '0') return { dec: false, v: 0n, exp: 0 };
  const p = split(str);
  const { base, exponent } = interpret(p.suffix);
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (base === 10) {
    scale = exponent;
    precision = 18 - (p.num.length + p.denom.length);
  } else if (p.denom.length === 0) {
    mantissa = 1n << BigInt(exponent);
    precision = 15 - p.num.length - Math.trunc((exponent * 3) / 10) - 1;
  } else precision = -1;
  if (precision >= 0) {
    scale = i32(scale - p.denom.length);
    if (scale >= -9) {
      const r = mul64(BigInt(p.num + p.denom), mantissa);
      if (r !== undefined) return { dec: false, v: p.positive ? r : i64(-r), exp: scale };
    }
  }
  // The inf.Dec path: exact, then rounded away from zero to nano units.
  const m = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(p.value);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) throw new Error(NUMERIC);
  let v = BigInt(m[2]! + (m[3] ?? '') || '0');
  let infScale = (m[3] ?? '').length;
  if (base === 10) infScale = i32(infScale - exponent);
  else v <<= BigInt(exponent);
  if (v !== 0n) {
    // Go would build a number of that many digits; annex refuses rather than hang.
    if (Math.abs(infScale) > 100_000)
      throw new Error(`quantity ${str}: exponent out of annex's range`);
    if (infScale <= 9) v *= pow10(9 - infScale);
    else {
      const d = pow10(infScale - 9);
      v = v / d + (v % d === 0n ? 0n : 1n);
    }
    infScale = 9;
  }
  if (base === 2 && v > MAX * pow10(infScale)) {
    v = MAX;
    infScale = 0;
  }
  const neg = m[1] === '-';
  return { dec: true, v: neg ? -v : v, exp: -infScale };
}

/** int64Multiply: the product, or undefined on overflow. */
function mul64(a: bigint, b: bigint): bigint | undefined {
  const c = a * b;
  return fits(c) ? c : undefined;
}

/** positiveScaleInt64: base × 10^scale if it fits int64. */
const scaleUp = (base: bigint, scale: number) =>
  base === 0n ? 0n : scale > 19 ? undefined : mul64(base, pow10(scale));

/** int64Amount.Add: the sum in int64Amount, or undefined (then Go falls back to inf.Dec). */
function addInt(a: Qty, b: Qty): Qty | undefined {
  if (b.v === 0n) return { ...a };
  if (a.v === 0n) return { dec: false, v: b.v, exp: b.exp };
  let av = a.v;
  let bv = b.v;
  const exp = Math.min(a.exp, b.exp);
  if (a.exp > b.exp) av = scaleUp(a.v, a.exp - b.exp) ?? NaNBig;
  else if (b.exp > a.exp) bv = scaleUp(b.v, b.exp - a.exp) ?? NaNBig;
  if (av === NaNBig || bv === NaNBig) return undefined;
  const c = av + bv;
  return fits(c) ? { dec: false, v: c, exp } : undefined;
}
const NaNBig = MAX + 1n; // never a valid int64

/** inf.Dec addition: exact, at the larger scale. */
function addDec(a: Qty, b: Qty): Qty {
  const exp = Math.min(a.exp, b.exp);
  return { dec: true, v: a.v * pow10(a.exp - exp) + b.v * pow10(b.exp - exp), exp };
}

export function add(a: Qty, b: Qty): Qty {
  return (!a.dec && !b.dec && addInt(a, b)) || addDec(a, b);
}

export function sub(a: Qty, b: Qty): Qty {
  const nb = { ...b, v: -b.v };
  return (!a.dec && !b.dec && addInt(a, { ...b, v: i64(-b.v) })) || addDec(a, nb);
}

const sign = (q: Qty) => (q.v > 0n ? 1 : q.v < 0n ? -1 : 0);

/** The numeric order of two quantities (exact). */
export function cmp(a: Qty, b: Qty): number {
  const sa = sign(a);
  const sb = sign(b);
  if (sa !== sb || sa === 0) return Math.sign(sa - sb);
  // Same sign: compare magnitudes by order of magnitude first (exponents may be far apart).
  const mag = (q: Qty) => (q.v < 0n ? -q.v : q.v).toString().length + q.exp;
  const ma = mag(a);
  const mb = mag(b);
  if (ma !== mb) return ma > mb ? sa : -sa;
  const exp = Math.min(a.exp, b.exp);
  const x = a.v * pow10(a.exp - exp);
  const y = b.v * pow10(b.exp - exp);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Quantity.Cmp, which turns its receiver into an inf.Dec when either side is one. */
function cmpMutating(a: Qty, b: Qty): number {
  if (a.dec || b.dec) a.dec = true;
  return cmp(a, b);
}

/** Quantity.AsInt64. */
export function asInt64(q: Qty): bigint | undefined {
  if (q.dec || q.exp < 0) return undefined;
  return q.exp === 0 ? q.v : scaleUp(q.v, q.exp);
}

/** Go's math.Pow10, from the same tables (each entry the correctly rounded constant). */
function goPow10(n: number): number {
  if (n >= 0 && n <= 308) return Number(`1e${32 * Math.floor(n / 32)}`) * Number(`1e${n % 32}`);
  if (n < 0 && n >= -323) return Number(`1e-${32 * Math.floor(-n / 32)}`) / Number(`1e${-n % 32}`);
  return n > 0 ? Infinity : 0;
}

/** Quantity.AsApproximateFloat64. */
export function asFloat(q: Qty): number {
  const base = Number(q.v);
  return q.exp === 0 ? base : base * goPow10(q.exp);
}

/** The equality key: the value with trailing zeros moved into the exponent. */
function key(q: Qty): string {
  if (q.v === 0n) return '0';
  let v = q.v;
  let exp = q.exp;
  while (v % 10n === 0n) {
    v /= 10n;
    exp++;
  }
  return `${v}e${exp}`;
}

const Q = opaqueType<Qty>('kubernetes.Quantity');
const QT = Q.type;
const wrap = (q: Qty) => Q.wrap(q, key(q));
const INT = CelScalar.INT;
const BOOL = CelScalar.BOOL;

export const quantity = [
  celFunc('quantity', [CelScalar.STRING], QT, (s) => wrap(parseQuantity(s))),
  celFunc('isQuantity', [CelScalar.STRING], BOOL, (s) => {
    try {
      parseQuantity(s);
      return true;
    } catch {
      return false;
    }
  }),
  celFunc('sign', [QT], INT, (q) => BigInt(sign(Q.unwrap(q)))),
  celMethod('isGreaterThan', QT, [QT], BOOL, function (o) {
    return cmpMutating(Q.unwrap(this), Q.unwrap(o)) === 1;
  }),
  celMethod('isLessThan', QT, [QT], BOOL, function (o) {
    return cmpMutating(Q.unwrap(this), Q.unwrap(o)) === -1;
  }),
  celMethod('compareTo', QT, [QT], INT, function (o) {
    return BigInt(cmpMutating(Q.unwrap(this), Q.unwrap(o)));
  }),
  celMethod('asApproximateFloat', QT, [], CelScalar.DOUBLE, function () {
    return asFloat(Q.unwrap(this));
  }),
  celMethod('asInteger', QT, [], INT, function () {
    const v = asInt64(Q.unwrap(this));
    if (v === undefined) throw new Error('cannot convert value to integer');
    return v;
  }),
  celMethod('isInteger', QT, [], BOOL, function () {
    return asInt64(Q.unwrap(this)) !== undefined;
  }),
  celMethod('add', QT, [QT], QT, function (o) {
    return wrap(add(Q.unwrap(this), Q.unwrap(o)));
  }),
  celMethod('add', QT, [INT], QT, function (n) {
    return wrap(add(Q.unwrap(this), { dec: false, v: n, exp: 0 }));
  }),
  celMethod('sub', QT, [QT], QT, function (o) {
    return wrap(sub(Q.unwrap(this), Q.unwrap(o)));
  }),
  celMethod('sub', QT, [INT], QT, function (n) {
    return wrap(sub(Q.unwrap(this), { dec: false, v: n, exp: 0 }));
  }),
];
