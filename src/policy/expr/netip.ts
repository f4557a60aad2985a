// A port of Go's net/netip parsing (ParseAddr, ParsePrefix: strict dotted quads, no
// leading zeros, RFC 4291 IPv6 with an embedded IPv4 tail), its error messages, its String
// forms (RFC 5952) and the Addr/Prefix predicates the ip and cidr libraries call.
import { goQuote } from '../../admission/names/index.js';

export interface Addr {
  v4: boolean;
  /** The address as an unsigned 32- or 128-bit number. */
  n: bigint;
  zone: string;
}

export interface Prefix {
  addr: Addr;
  bits: number;
}

/** Go's %q (strconv.Quote), for the libraries' messages. */
export { goQuote };

const parseAddrText = (q: (s: string) => string, input: string, why: string, at: string) =>
  `ParseAddr(${q(input)}): ${why}${at ? ` (at ${q(at)})` : ''}`;

class ParseAddrError extends Error {
  constructor(
    readonly input: string,
    readonly why: string,
    readonly at = '',
  ) {
    super(parseAddrText(goQuote, input, why, at));
  }
}

/**
 * ParseAddr over bytes (one char per byte, as net/url hands it an unescaped host), its
 * message quoting them with `quote` (invalid UTF-8 as `\xff`, as Go does).
 */
export function parseAddrBytes(b: string, quote: (s: string) => string): Addr {
  try {
    return parseAddr(b);
  } catch (e) {
    if (e instanceof ParseAddrError) throw new Error(parseAddrText(quote, e.input, e.why, e.at));
    throw e;
  }
}

/** parseIPv4Fields over in[off:end]: the four octets. */
function ipv4Fields(input: string, off: number, end: number): number[] {
  const s = input.slice(off, end);
  const fields: number[] = [];
  let val = 0;
  let digits = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch >= '0' && ch <= '9') {
      if (digits === 1 && val === 0)
        throw new ParseAddrError(input, 'IPv4 field has octet with leading zero');
      val = val * 10 + Number(ch);
      digits++;
      if (val > 255) throw new ParseAddrError(input, 'IPv4 field has value >255');
    } else if (ch === '.') {
      if (i === 0 || i === s.length - 1 || s[i - 1] === '.')
        throw new ParseAddrError(input, 'IPv4 field must have at least one digit', s.slice(i));
      if (fields.length === 3) throw new ParseAddrError(input, 'IPv4 address too long');
      fields.push(val);
      val = 0;
      digits = 0;
    } else throw new ParseAddrError(input, 'unexpected character', s.slice(i));
  }
  if (fields.length < 3) throw new ParseAddrError(input, 'IPv4 address too short');
  fields.push(val);
  return fields;
}

const fromBytes = (bytes: number[]) => bytes.reduce((n, b) => (n << 8n) | BigInt(b), 0n);

function parseIPv6(input: string): Addr {
  let s = input;
  let zone = '';
  const pct = s.indexOf('%');
  if (pct !== -1) {
    zone = s.slice(pct + 1);
    s = s.slice(0, pct);
    if (zone === '') throw new ParseAddrError(input, 'zone must be a non-empty string');
  }
  const ip = new Array<number>(16).fill(0);
  let ellipsis = -1;
  if (s.length >= 2 && s[0] === ':' && s[1] === ':') {
    ellipsis = 0;
    s = s.slice(2);
    if (s.length === 0) return { v4: false, n: 0n, zone };
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      if (!/[0-9a-fA-F]/.test(s[off]!)) break;
      acc = acc * 16 + parseInt(s[off]!, 16);
      if (off > 3) throw new ParseAddrError(input, 'each group must have 4 or less digits', s);
      if (acc > 0xffff) throw new ParseAddrError(input, 'IPv6 field has value >=2^16', s);
    }
    if (off === 0)
      throw new ParseAddrError(input, 'each colon-separated field must have at least one digit', s);
    if (off < s.length && s[off] === '.') {
      if (ellipsis < 0 && i !== 12)
        throw new ParseAddrError(
          input,
          'embedded IPv4 address must replace the final 2 fields of the address',
          s,
        );
      if (i + 4 > 16)
        throw new ParseAddrError(
          input,
          'too many hex fields to fit an embedded IPv4 at the end of the address',
          s,
        );
      const end = input.length - (zone.length > 0 ? zone.length + 1 : 0);
      ipv4Fields(input, end - s.length, end).forEach((b, k) => (ip[i + k] = b));
      s = '';
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s.length === 0) break;
    if (s[0] !== ':') throw new ParseAddrError(input, 'unexpected character, want colon', s);
    if (s.length === 1)
      throw new ParseAddrError(input, 'colon must be followed by more characters', s);
    s = s.slice(1);
    if (s[0] === ':') {
      if (ellipsis >= 0) throw new ParseAddrError(input, 'multiple :: in address', s);
      ellipsis = i;
      s = s.slice(1);
      if (s.length === 0) break;
    }
  }
  if (s.length !== 0) throw new ParseAddrError(input, 'trailing garbage after address', s);
  if (i < 16) {
    if (ellipsis < 0) throw new ParseAddrError(input, 'address string too short');
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j]!;
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    throw new ParseAddrError(input, 'the :: must expand to at least one field of zeros');
  }
  return { v4: false, n: fromBytes(ip), zone };
}

/** netip.ParseAddr. */
export function parseAddr(s: string): Addr {
  for (const ch of s) {
    if (ch === '.') return { v4: true, n: fromBytes(ipv4Fields(s, 0, s.length)), zone: '' };
    if (ch === ':') return parseIPv6(s);
    if (ch === '%') throw new ParseAddrError(s, 'missing IPv6 address');
  }
  throw new ParseAddrError(s, 'unable to parse IP');
}

export const is4In6 = (a: Addr) => !a.v4 && a.n >> 32n === 0xffffn;

/** Addr.String: dotted quad, or RFC 5952 (longest run of ≥ 2 zero groups as ::, lowercase). */
export function addrString(a: Addr): string {
  if (a.v4) return [24n, 16n, 8n, 0n].map((sh) => String((a.n >> sh) & 0xffn)).join('.');
  const g = Array.from({ length: 8 }, (_, k) => Number((a.n >> BigInt(112 - 16 * k)) & 0xffffn));
  if (is4In6(a)) return `::ffff:${addrString({ v4: true, n: a.n & 0xffffffffn, zone: '' })}`;
  let zs = -1;
  let ze = -1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i >= 2 && j - i > ze - zs) [zs, ze] = [i, j];
  }
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (i === zs) {
      out += '::';
      i = ze;
      if (i >= 8) break;
    } else if (i > 0) out += ':';
    out += g[i]!.toString(16);
  }
  return a.zone ? `${out}%${a.zone}` : out;
}

/** netip.ParsePrefix. */
export function parsePrefix(s: string): Prefix {
  const fail = (msg: string) => new Error(`netip.ParsePrefix(${goQuote(s)}): ${msg}`);
  const slash = s.lastIndexOf('/');
  if (slash < 0) throw fail("no '/'");
  let addr: Addr;
  try {
    addr = parseAddr(s.slice(0, slash));
  } catch (e) {
    throw fail((e as Error).message);
  }
  if (!addr.v4 && addr.zone !== '') throw fail('IPv6 zones cannot be present in a prefix');
  const bitsStr = s.slice(slash + 1);
  const bad = () => fail(`bad bits after slash: ${goQuote(bitsStr)}`);
  if (bitsStr.length > 1 && !(bitsStr[0]! >= '1' && bitsStr[0]! <= '9')) throw bad();
  // strconv.Atoi: an optional sign, decimal digits, in int64.
  if (!/^[+-]?[0-9]+$/.test(bitsStr) || BigInt(bitsStr) > 2n ** 63n - 1n) throw bad();
  const bits = Number(bitsStr);
  if (bits < 0 || bits > (addr.v4 ? 32 : 128)) throw fail('prefix length out of range');
  return { addr, bits };
}

export const width = (a: Addr) => (a.v4 ? 32 : 128);
export const mask = (a: Addr, bits: number) => {
  const w = BigInt(width(a));
  return (((1n << w) - 1n) >> (w - BigInt(bits))) << (w - BigInt(bits));
};
export const maskedAddr = (a: Addr, bits: number): Addr => ({
  v4: a.v4,
  n: a.n & mask(a, bits),
  zone: '',
});

export const prefixString = (p: Prefix) => `${addrString(p.addr)}/${p.bits}`;

export function containsIP(p: Prefix, a: Addr): boolean {
  if (a.zone !== '' || p.addr.v4 !== a.v4) return false;
  return ((a.n ^ p.addr.n) & mask(a, p.bits)) === 0n;
}

export function containsCIDR(p: Prefix, o: Prefix): boolean {
  if (p.addr.v4 !== o.addr.v4) return false;
  const min = Math.min(p.bits, o.bits);
  const overlaps = maskedAddr(p.addr, min).n === maskedAddr(o.addr, min).n;
  return overlaps && p.bits <= o.bits;
}

export const isMulticast = (a: Addr) => (a.v4 ? a.n >> 28n === 0xen : a.n >> 120n === 0xffn);
export const isLoopback = (a: Addr) => (a.v4 ? a.n >> 24n === 127n : a.n === 1n);
export const isLinkLocalUnicast = (a: Addr) =>
  a.v4 ? a.n >> 16n === 0xa9fen : ((a.n >> 112n) & 0xffc0n) === 0xfe80n;
export const isLinkLocalMulticast = (a: Addr) =>
  a.v4 ? a.n >> 8n === 0xe00000n : ((a.n >> 112n) & 0xff0fn) === 0xff02n;
export const isGlobalUnicast = (a: Addr) =>
  !(a.v4 && (a.n === 0n || a.n === 0xffffffffn)) &&
  !(!a.v4 && a.n === 0n) &&
  !isLoopback(a) &&
  !isMulticast(a) &&
  !isLinkLocalUnicast(a);
