// resource.Quantity (k8s.io/apimachinery/pkg/api/resource): one exact parser and one set of
// canonical formatters, for every feature. metrics-server emits CPU as DecimalSI at scale -9
// ("249957861n", "250m", "1") and memory as BinarySI ("2786616Ki", "3Gi", or plain bytes when
// not a multiple of 1024); the API server stores requests and limits rounded up to milli scale
// and canonicalised ("0.5" → "500m", "1024Mi" → "1Gi"). kubectl and the HPA compare these
// strings, so the exact form matters.

export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

/** A parsed quantity: value = num / den exactly, and the format its suffix chose. */
export interface ExactQuantity {
  num: bigint;
  den: bigint;
  format: QuantityFormat;
}

const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXPONENT).map(([s, e]) => [e, s]));

// A suffix letter wins over an exponent ("1E" is exa, "1E3" is 1000), as in apimachinery.
const QUANTITY_RE = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

/** The exact value of a quantity string, or undefined when it is not one. */
export function parseExact(text: string): ExactQuantity | undefined {
  const m = QUANTITY_RE.exec(text.trim());
  if (!m) return undefined;
  const [, sign = '', whole = '', frac = '', suffix = ''] = m;
  if (whole === '' && frac === '') return undefined;
  let num = BigInt(`${whole || '0'}${frac}`) * (sign === '-' ? -1n : 1n);
  let den = 10n ** BigInt(frac.length);
  const binary = BINARY_SUFFIX.indexOf(suffix);
  if (binary > 0) return { num: num * 1024n ** BigInt(binary), den, format: 'BinarySI' };
  const si = DECIMAL_EXPONENT[suffix];
  const exp = si ?? Number(suffix.slice(1));
  if (exp >= 0) num *= 10n ** BigInt(exp);
  else den *= 10n ** BigInt(-exp);
  return { num, den, format: si === undefined ? 'DecimalExponent' : 'DecimalSI' };
}

/** The value as a float in base units (cores, bytes), or undefined when it is not a quantity. */
export function quantityValue(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const p = parseExact(String(value));
  return p ? Number(p.num) / Number(p.den) : undefined;
}

function parseOrThrow(text: string): ExactQuantity {
  const p = parseExact(text);
  if (!p) throw new Error(`quantities must match the regular expression: invalid "${text}"`);
  return p;
}

/**
 * A quantity string as a float in base units (cores, bytes); throws on anything else.
 * Approximate above 2^53: for tests, sorting and display sums, never for canonical strings.
 */
export function parseQuantity(text: string): number {
  const p = parseOrThrow(text);
  return Number(p.num) / Number(p.den);
}

/** value × scale as a whole number, rounded half towards +∞ (as Math.round does). */
function scaledInteger(text: string, scale: bigint): bigint {
  const { num, den } = parseOrThrow(text);
  const twice = 2n * num * scale + den;
  const q = twice / (2n * den);
  // BigInt division truncates towards zero; step down to the floor for negative remainders.
  return twice % (2n * den) < 0n ? q - 1n : q;
}

/** Exact nanocores of a CPU quantity ("249957861n" round-trips). */
export function parseNanocores(text: string): bigint {
  return scaledInteger(text, 1_000_000_000n);
}

/** Exact bytes of a memory quantity. */
export function parseBytes(text: string): bigint {
  return scaledInteger(text, 1n);
}

/** Go's `%` keeps the sign of the dividend; so does JS, but name it to show it matters. */
const goMod = (a: number, b: number) => a % b;

/**
 * apimachinery's AsCanonicalBytes: strip trailing zeros into the exponent, then round the
 * exponent *down* to a multiple of 3 by scaling the mantissa up.
 */
function canonicalDecimal(mantissa: bigint, exponent: number): [bigint, number] {
  let v = mantissa;
  let e = exponent;
  while (v % 10n === 0n) {
    v /= 10n;
    e += 1;
  }
  switch (goMod(e, 3)) {
    case 1:
    case -2:
      return [v * 10n, e - 1];
    case 2:
    case -1:
      return [v * 100n, e - 2];
  }
  return [v, e];
}

/**
 * DecimalSI canonical form of `mantissa × 10^exponent`. Outside n..E apimachinery prints the
 * mantissa with no suffix at all (1e21 becomes "1", a different value); this keeps the value
 * with an exponent suffix ("1e21") instead.
 */
export function formatDecimalSI(mantissa: bigint, exponent: number): string {
  if (mantissa === 0n) return '0';
  const [v, e] = canonicalDecimal(mantissa, exponent);
  return `${v}${DECIMAL_SUFFIX.get(e) ?? `e${e}`}`;
}

/** DecimalExponent canonical form of `mantissa × 10^exponent` ("129e6", "500e-3", "1"). */
export function formatDecimalExponent(mantissa: bigint, exponent: number): string {
  if (mantissa === 0n) return '0';
  const [v, e] = canonicalDecimal(mantissa, exponent);
  return e === 0 ? `${v}` : `${v}e${e}`;
}

/** BinarySI canonical form of a whole number of bytes (DecimalSI below 1024, as Go does). */
export function formatBinarySI(bytes: bigint): string {
  if (bytes === 0n) return '0';
  const abs = bytes < 0n ? -bytes : bytes;
  if (abs < 1024n) return formatDecimalSI(bytes, 0);
  let v = bytes;
  let n = 0;
  while (n < BINARY_SUFFIX.length - 1 && v % 1024n === 0n) {
    v /= 1024n;
    n += 1;
  }
  return `${v}${BINARY_SUFFIX[n]}`;
}

const toBig = (n: number | bigint): bigint => (typeof n === 'bigint' ? n : BigInt(Math.trunc(n)));

/** CPU usage in whole nanocores → "249957861n" / "250m" / "1". */
export function formatCpu(nanocores: number | bigint): string {
  return formatDecimalSI(toBig(nanocores), -9);
}

/** Memory in whole bytes → "2786616Ki" / "3Gi" / "12533761". */
export function formatMemory(bytes: number | bigint): string {
  return formatBinarySI(toBig(bytes));
}

/** `kubectl top`'s CPU cell: MilliValue (rounded up) + "m": 1977465164n → "1978m". */
export function topCpu(nanocores: number | bigint): string {
  const n = toBig(nanocores);
  const milli = n <= 0n ? -(-n / 1_000_000n) : (n + 999_999n) / 1_000_000n;
  return `${milli}m`;
}

/** `kubectl top`'s memory cell: whole bytes / 2^20, truncated, + "Mi": 1332896Ki → "1301Mi". */
export function topMemory(bytes: number | bigint): string {
  return `${toBig(bytes) / 1_048_576n}Mi`;
}

/**
 * As the API server stores a quantity (SetDefaults_ResourceList): rounded up to milli scale
 * and printed in canonical form. Unparsable input is returned unchanged (the API server would
 * reject it in validation, which is not this module's job).
 */
export function canonicalQuantity(value: string | number): string | number {
  const p = parseExact(String(value));
  if (!p) return value;
  // ceil(value × 1000), exactly: BigInt division truncates, which is the ceiling below zero.
  const scaled = p.num * 1000n;
  let milli = scaled / p.den;
  if (scaled % p.den !== 0n && scaled > 0n) milli += 1n;
  // BinarySI only for whole numbers (formatBinarySI prints those below 1024 as DecimalSI).
  if (p.format === 'BinarySI' && milli % 1000n === 0n) return formatBinarySI(milli / 1000n);
  if (p.format === 'DecimalExponent') return formatDecimalExponent(milli, -3);
  return formatDecimalSI(milli, -3);
}
