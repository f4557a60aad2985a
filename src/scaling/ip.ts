// IP addresses and CIDR ranges as numbers, for the outbound allow-list: an address is
// parsed once (net.isIP decides what is an address, so the rules here and Node's connect
// agree), and an IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it carries
// on the wire.
import { isIP } from 'node:net';

export interface Ip {
  family: 4 | 6;
  /** 32 or 128 bits. */
  value: bigint;
}

export interface Cidr {
  family: 4 | 6;
  /** The first address (host bits zero). */
  base: bigint;
  prefix: number;
}

const bitsOf = (family: 4 | 6) => (family === 4 ? 32 : 128);

function parse4(text: string): bigint {
  return text.split('.').reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function parse6(text: string): bigint {
  // A zone (fe80::1%eth0) says which link, not which address.
  let s = text.replace(/%.*$/, '');
  const lastColon = s.lastIndexOf(':');
  const tail = s.slice(lastColon + 1);
  if (tail.includes('.')) {
    // An embedded dotted quad is the last two groups.
    const v4 = parse4(tail);
    s = `${s.slice(0, lastColon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [left = '', right] = s.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const all =
    right === undefined
      ? groups(left)
      : [
          ...groups(left),
          ...Array<string>(8 - groups(left).length - groups(right).length).fill('0'),
          ...groups(right),
        ];
  return all.reduce((n, g) => (n << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** The address, or undefined when `text` is not one; IPv4-mapped IPv6 becomes IPv4. */
export function parseIp(text: string): Ip | undefined {
  const family = isIP(text);
  if (family === 4) return { family: 4, value: parse4(text) };
  if (family !== 6) return undefined;
  const value = parse6(text);
  if (value >> 32n === 0xffffn) return { family: 4, value: value & 0xffffffffn };
  return { family: 6, value };
}

/** `10.0.0.0/8`, `fd00::/8`, or a bare address (a /32 or /128); undefined if malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const addrText = slash < 0 ? text : text.slice(0, slash);
  if (isIP(addrText) === 0) return undefined;
  const raw = isIP(addrText) === 4 ? parse4(addrText) : parse6(addrText);
  const family: 4 | 6 = isIP(addrText) === 4 ? 4 : 6;
  const bits = bitsOf(family);
  let prefix = bits;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > bits) return undefined;
    prefix = Number(p);
  }
  // An IPv4-mapped range is the IPv4 range it maps (parseIp maps addresses the same way).
  if (family === 6 && prefix >= 96 && raw >> 32n === 0xffffn) {
    return cidrOf(4, raw & 0xffffffffn, prefix - 96);
  }
  return cidrOf(family, raw, prefix);
}

export function cidrOf(family: 4 | 6, address: bigint, prefix: number): Cidr {
  const host = bitsOf(family) - prefix;
  return { family, base: (address >> BigInt(host)) << BigInt(host), prefix };
}

export function contains(c: Cidr, ip: Ip): boolean {
  if (c.family !== ip.family) return false;
  const host = BigInt(bitsOf(c.family) - c.prefix);
  return ip.value >> host === c.base >> host;
}

/** Whether every address of `inner` is in `outer`. */
export const within = (inner: Cidr, outer: Cidr): boolean =>
  inner.prefix >= outer.prefix && contains(outer, { family: inner.family, value: inner.base });

/** The IPv4 address an IPv6 address carries at bit `shift` (from the right). */
export const embeddedV4 = (ip: Ip, shift: number): Ip => ({
  family: 4,
  value: (ip.value >> BigInt(shift)) & 0xffffffffn,
});

/** The IPv6 range that carries the IPv4 range `v4` at bit `shift` under `prefix` (of `outer`). */
export const embeddingOf = (outer: Cidr, v4: Cidr, shift: number): Cidr =>
  cidrOf(6, outer.base | (v4.base << BigInt(shift)), 128 - shift - (32 - v4.prefix));
