// Kubernetes Quantity strings as apimachinery's canonical form prints them, because
// metrics-server emits CPU as a DecimalSI quantity at scale -9 ("249957861n", "250m", "1")
// and memory as BinarySI ("2786616Ki", "3Gi", or plain bytes when not a multiple of 1024).
// kubectl top and the HPA parse these strings, so the exact form matters for equality tests.

const DECIMAL_SUFFIX = new Map<number, string>([
  [-9, 'n'],
  [-6, 'u'],
  [-3, 'm'],
  [0, ''],
  [3, 'k'],
  [6, 'M'],
  [9, 'G'],
  [12, 'T'],
  [15, 'P'],
  [18, 'E'],
]);
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** Go's `%` keeps the sign of the dividend; so does JS, but name it to show it matters. */
const goMod = (a: number, b: number) => a % b;

/**
 * DecimalSI canonical form of `mantissa × 10^exponent`: strip trailing zeros into the
 * exponent, then round the exponent *down* to a multiple of 3 by scaling the mantissa up.
 */
export function formatDecimalSI(mantissa: bigint, exponent: number): string {
  if (mantissa === 0n) return '0';
  let v = mantissa;
  let e = exponent;
  while (v % 10n === 0n) {
    v /= 10n;
    e += 1;
  }
  switch (goMod(e, 3)) {
    case 1:
    case -2:
      v *= 10n;
      e -= 1;
      break;
    case 2:
    case -1:
      v *= 100n;
      e -= 2;
      break;
  }
  const suffix = DECIMAL_SUFFIX.get(e);
  // Outside n..E apimachinery falls back to an exponent suffix ("1e21").
  return `${v}${suffix ?? `e${e}`}`;
}

/** BinarySI canonical form of a whole number of bytes. */
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

const SUFFIX_FACTOR: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

const QUANTITY_RE =
  /^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/**
 * A quantity string as a float in base units (cores, bytes). Approximate above 2^53; meant
 * for tests, sorting and display sums, never for producing canonical strings.
 */
export function parseQuantity(text: string): number {
  const m = QUANTITY_RE.exec(text.trim());
  if (!m) throw new Error(`quantities must match the regular expression: invalid "${text}"`);
  const num = Number(m[1]);
  if (m[2]) return num * 10 ** Number(m[2].slice(1));
  return num * (SUFFIX_FACTOR[m[3] ?? ''] ?? 1);
}

/** Exact nanocores of a CPU quantity (parsed with BigInt so "249957861n" round-trips). */
export function parseNanocores(text: string): bigint {
  const m = /^(\d+)([num]?)$/.exec(text.trim());
  if (m) {
    const scale: Record<string, bigint> = { n: 1n, u: 1000n, m: 1_000_000n, '': 1_000_000_000n };
    return BigInt(m[1] ?? '0') * (scale[m[2] ?? ''] ?? 1n);
  }
  return BigInt(Math.round(parseQuantity(text) * 1e9));
}

const DECIMAL_POWERS = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

/** Exact bytes of a memory quantity in the forms formatMemory emits. */
export function parseBytes(text: string): bigint {
  const m = /^(\d+)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/.exec(text.trim());
  if (!m) return BigInt(Math.round(parseQuantity(text)));
  const unit = m[2] ?? '';
  const binary = BINARY_SUFFIX.indexOf(unit);
  const factor =
    binary > 0 ? 1024n ** BigInt(binary) : 1000n ** BigInt(DECIMAL_POWERS.indexOf(unit));
  return BigInt(m[1] ?? '0') * factor;
}
