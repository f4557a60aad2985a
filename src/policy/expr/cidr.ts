// Kubernetes' cidr library (k8s.io/apiserver/pkg/cel/library/cidr.go) over expr/netip.ts.
import { celFunc, celMethod, CelScalar } from '@bufbuild/cel';
import { IP, parseIP, wrapIP } from './ip.js';
import {
  containsCIDR,
  containsIP,
  goQuote,
  is4In6,
  maskedAddr,
  parsePrefix,
  prefixString,
  type Addr,
  type Prefix,
} from './netip.js';
import { opaqueType } from './opaque.js';

/** The cidr library's parseCIDR (its error is wrapped twice, as the library does). */
export function parseCIDR(raw: string): Prefix {
  const wrap = 'network address parse error during conversion from string: ';
  let p: Prefix;
  try {
    p = parsePrefix(raw);
  } catch (e) {
    throw new Error(`${wrap}${wrap}${(e as Error).message}`);
  }
  if (is4In6(p.addr))
    throw new Error(`${wrap}IPv4-mapped IPv6 address ${goQuote(raw)} is not allowed`);
  return p;
}

/** net.CIDR values: equal when their address and length are. */
const CIDR = opaqueType<Prefix>('net.CIDR');
const wrapCIDR = (p: Prefix) => CIDR.wrap(p, prefixString(p));
const { BOOL, INT, STRING } = CelScalar;

export const cidr = [
  celFunc('cidr', [STRING], CIDR.type, (s) => wrapCIDR(parseCIDR(s))),
  celFunc('isCIDR', [STRING], BOOL, (s) => {
    try {
      parseCIDR(s);
      return true;
    } catch {
      return false;
    }
  }),
  celFunc('string', [CIDR.type], STRING, (p) => prefixString(CIDR.unwrap(p))),
  celMethod('containsIP', CIDR.type, [STRING], BOOL, function (s) {
    // The library hands the IP's parse error to a check that answers with the CIDR
    // argument's state (MaybeNoSuchOverloadErr(arg)): an invalid IP is "no such overload".
    let a: Addr;
    try {
      a = parseIP(s);
    } catch {
      throw new Error('no such overload');
    }
    return containsIP(CIDR.unwrap(this), a);
  }),
  celMethod('containsIP', CIDR.type, [IP.type], BOOL, function (a) {
    return containsIP(CIDR.unwrap(this), IP.unwrap(a));
  }),
  celMethod('containsCIDR', CIDR.type, [STRING], BOOL, function (s) {
    return containsCIDR(CIDR.unwrap(this), parseCIDR(s));
  }),
  celMethod('containsCIDR', CIDR.type, [CIDR.type], BOOL, function (o) {
    return containsCIDR(CIDR.unwrap(this), CIDR.unwrap(o));
  }),
  celMethod('ip', CIDR.type, [], IP.type, function () {
    return wrapIP(CIDR.unwrap(this).addr);
  }),
  celMethod('prefixLength', CIDR.type, [], INT, function () {
    return BigInt(CIDR.unwrap(this).bits);
  }),
  celMethod('masked', CIDR.type, [], CIDR.type, function () {
    const p = CIDR.unwrap(this);
    return wrapCIDR({ addr: maskedAddr(p.addr, p.bits), bits: p.bits });
  }),
];
