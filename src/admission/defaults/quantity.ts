// resource.Quantity as the API server stores it: rounded up to milli scale (SetDefaults_ResourceList)
// and printed in canonical form ("0.5" → "500m", "1024Mi" → "1Gi"). Exact, with BigInt.

const binary: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimal: Record<string, number> = {
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
const decimalSuffix: Record<number, string> = Object.fromEntries(
  Object.entries(decimal).map(([s, e]) => [e, s]),
);

const quantityRe = /^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$/;

type Format = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

interface Parsed {
  /** value = num / den, exactly. */
  num: bigint;
  den: bigint;
  format: Format;
}

function pow(base: bigint, exp: number): bigint {
  return base ** BigInt(exp);
}

function parse(text: string): Parsed | undefined {
  const m = quantityRe.exec(text.trim());
  if (!m) return undefined;
  const [, sign = '', whole = '', frac = '', suffix = ''] = m;
  if (whole === '' && frac === '') return undefined;
  let num = BigInt(`${whole || '0'}${frac}`) * (sign === '-' ? -1n : 1n);
  let den = pow(10n, frac.length);
  let format: Format;
  if (suffix in binary) {
    format = 'BinarySI';
    num *= pow(2n, binary[suffix] ?? 0);
  } else {
    const exp = suffix in decimal ? (decimal[suffix] ?? 0) : Number(suffix.slice(1));
    format = suffix in decimal ? 'DecimalSI' : 'DecimalExponent';
    if (exp >= 0) num *= pow(10n, exp);
    else den *= pow(10n, -exp);
  }
  return { num, den, format };
}

/** The canonical string of an integer count of milli-units, in Kubernetes' chosen format. */
function format(milli: bigint, fmt: Format): string {
  const neg = milli < 0n;
  const abs = neg ? -milli : milli;
  const sign = neg ? '-' : '';
  if (abs === 0n) return '0';
  // Binary only for whole numbers of at least 1024 (smaller values are printed as DecimalSI).
  if (fmt === 'BinarySI' && abs % 1000n === 0n && abs / 1000n >= 1024n) {
    let units = abs / 1000n;
    let i = 0;
    const suffixes = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
    while (i < suffixes.length - 1 && units % 1024n === 0n) {
      units /= 1024n;
      i += 1;
    }
    return `${sign}${units}${suffixes[i]}`;
  }
  // Decimal: the largest exponent (multiple of 3, from -3) that keeps an integer mantissa.
  let mantissa = abs;
  let exp = -3;
  while (mantissa % 1000n === 0n && exp < 18) {
    mantissa /= 1000n;
    exp += 3;
  }
  if (fmt === 'DecimalExponent') return `${sign}${mantissa}${exp === 0 ? '' : `e${exp}`}`;
  return `${sign}${mantissa}${decimalSuffix[exp] ?? ''}`;
}

/**
 * Round up to milli scale and canonicalise. Unparsable input is returned unchanged (the API
 * server would reject it in validation, which is not this module's job).
 */
export function canonicalQuantity(value: string | number): string | number {
  const p = parse(String(value));
  if (!p) return value;
  // ceil(value * 1000) with exact integer arithmetic (towards +infinity).
  const scaled = p.num * 1000n;
  let milli = scaled / p.den;
  if (scaled % p.den !== 0n && scaled > 0n) milli += 1n;
  return format(milli, p.format);
}

/** The value as a number, for comparisons (QoS). */
export function quantityValue(value: unknown): number | undefined {
  if (typeof value !== 'string' && typeof value !== 'number') return undefined;
  const p = parse(String(value));
  return p ? Number(p.num) / Number(p.den) : undefined;
}
