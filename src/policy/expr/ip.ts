// Kubernetes' ip library (k8s.io/apiserver/pkg/cel/library/ip.go) over expr/netip.ts. The
// library refuses zones and IPv4-mapped IPv6 addresses.
import { celFunc, celMethod, CelScalar } from '@bufbuild/cel';
import {
  addrString,
  goQuote,
  is4In6,
  isGlobalUnicast,
  isLinkLocalMulticast,
  isLinkLocalUnicast,
  isLoopback,
  parseAddr,
  type Addr,
} from './netip.js';
import { opaqueType } from './opaque.js';

/** The ip library's parseIPAddr. */
export function parseIP(raw: string): Addr {
  let a: Addr;
  try {
    a = parseAddr(raw);
  } catch (e) {
    throw new Error(
      `IP Address ${goQuote(raw)} parse error during conversion from string: ${(e as Error).message}`,
    );
  }
  if (a.zone !== '') throw new Error(`IP address ${goQuote(raw)} with zone value is not allowed`);
  if (is4In6(a)) throw new Error(`IPv4-mapped IPv6 address ${goQuote(raw)} is not allowed`);
  return a;
}

/** net.IP values: equal when their addresses are. */
export const IP = opaqueType<Addr>('net.IP');
export const wrapIP = (a: Addr) => IP.wrap(a, addrString(a));
const { BOOL, INT, STRING } = CelScalar;

export const ip = [
  celFunc('ip', [STRING], IP.type, (s) => wrapIP(parseIP(s))),
  celFunc('isIP', [STRING], BOOL, (s) => {
    try {
      parseIP(s);
      return true;
    } catch {
      return false;
    }
  }),
  celFunc('ip.isCanonical', [STRING], BOOL, (s) => addrString(parseIP(s)) === s),
  celFunc('string', [IP.type], STRING, (a) => addrString(IP.unwrap(a))),
  celMethod('family', IP.type, [], INT, function () {
    return IP.unwrap(this).v4 ? 4n : 6n;
  }),
  ...(
    [
      ['isUnspecified', (a: Addr) => a.n === 0n],
      ['isLoopback', isLoopback],
      ['isLinkLocalMulticast', isLinkLocalMulticast],
      ['isLinkLocalUnicast', isLinkLocalUnicast],
      ['isGlobalUnicast', isGlobalUnicast],
    ] as const
  ).map(([name, f]) =>
    celMethod(name, IP.type, [], BOOL, function () {
      return f(IP.unwrap(this));
    }),
  ),
];
