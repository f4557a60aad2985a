// Where a json or prometheus source may be read from: only what the cluster admin lists in
// scaling.allow (URL prefixes, host names, CIDRs), and never — whatever a name or a broad
// CIDR allows — the host itself, link-local or cloud-metadata addresses, unless the admin
// names that very address. The check is on the address the socket dials: an IP literal
// before the request is made, a name in the `lookup` the socket calls, so the answer
// checked is the answer connected to (DNS cannot give another one in between). Redirects
// are not followed (sources.ts).
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { UserError } from '../errors.js';
import {
  contains,
  embeddedV4,
  embeddingOf,
  parseCidr,
  parseIp,
  within,
  type Cidr,
  type Ip,
} from './ip.js';

export interface AllowList {
  urls: string[];
  hosts: string[];
  cidrs: string[];
}

const cidr = (text: string) => parseCidr(text)!;

/** Refused unless named literally (a URL or host entry with the address, or a CIDR inside the range). */
const SPECIAL: { range: Cidr; what: string }[] = [
  ['0.0.0.0/8', '"this host" (0.0.0.0 reaches the local host)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local (cloud metadata: 169.254.169.254)'],
  ['100.100.100.200/32', 'cloud metadata (Alibaba Cloud)'],
  ['168.63.129.16/32', "the cloud host's platform address (Azure WireServer)"],
  ['::/128', 'the unspecified address'],
  ['::1/128', 'loopback'],
  ['fe80::/10', 'link-local'],
  ['fd00:ec2::254/128', 'cloud metadata (AWS, IPv6)'],
].map(([range, what]) => ({ range: cidr(range!), what: what! }));

/** IPv6 forms a translator or relay delivers to the IPv4 address they carry (at `shift`). */
const EMBEDDING: { range: Cidr; shift: number; form: string }[] = [
  { range: cidr('64:ff9b::/96'), shift: 0, form: 'NAT64' },
  { range: cidr('::/96'), shift: 0, form: 'IPv4-compatible' },
  { range: cidr('2002::/16'), shift: 80, form: '6to4' },
];

/** The refused range an address is in, and what it is; IPv4-mapped addresses are IPv4 already. */
export function specialRange(ip: Ip): { range: Cidr; what: string } | undefined {
  const direct = SPECIAL.find((s) => contains(s.range, ip));
  if (direct || ip.family === 4) return direct;
  for (const e of EMBEDDING) {
    if (!contains(e.range, ip)) continue;
    const inner = specialRange(embeddedV4(ip, e.shift));
    if (inner) {
      return {
        range: embeddingOf(e.range, inner.range, e.shift),
        what: `${inner.what}, in ${e.form} form`,
      };
    }
  }
  return undefined;
}

/**
 * What the allow-list grants a URL by its name: `literal` when a URL or host entry matches
 * and the host is an IP address (the admin named that address), `name` when it matches a
 * DNS name (its answers are still checked), `none` when nothing lists it.
 */
export type Grant = 'literal' | 'name' | 'none';

/** A connection annex refuses to open; raised before any packet goes to the address. */
export class OutboundRefused extends Error {
  override name = 'OutboundRefused';
}

interface HostEntry {
  name?: string;
  /** `*.example.com` → `.example.com`. */
  suffix?: string;
  ip?: Ip;
}

/** The host as the socket gets it: no IPv6 brackets, no trailing dot, lower case. */
export const hostOf = (url: URL): string =>
  url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');

const DNS_NAME = /^(\*\.)?([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function parseUrlEntry(text: string, at: string): URL {
  let u: URL | undefined;
  try {
    u = new URL(text);
  } catch {
    // reported below
  }
  if (!u || !/^https?:$/.test(u.protocol) || u.search || u.hash || u.username || u.password) {
    throw new UserError(
      `${at}: ${JSON.stringify(text)} must be an http:// or https:// URL prefix without credentials, query or fragment`,
    );
  }
  return u;
}

function parseHostEntry(text: string, at: string): HostEntry {
  const host = text.toLowerCase().replace(/^\[(.*)\]$/, '$1');
  const ip = parseIp(host);
  if (ip) return { ip };
  const m = DNS_NAME.exec(host.replace(/\.$/, ''));
  if (!m) {
    throw new UserError(
      `${at}: ${JSON.stringify(text)} must be a host name (optionally *.domain) or an IP address, without port or path`,
    );
  }
  const name = host.replace(/\.$/, '');
  return m[1] ? { suffix: name.slice(1) } : { name };
}

function hostMatches(e: HostEntry, host: string): boolean {
  if (e.ip) {
    const ip = parseIp(host);
    return !!ip && ip.family === e.ip.family && ip.value === e.ip.value;
  }
  if (e.suffix) return host.endsWith(e.suffix) && host.length > e.suffix.length;
  return host === e.name;
}

/** The URL is under the prefix: same scheme, host and port, and the path at a segment boundary. */
function underPrefix(url: URL, prefix: URL): boolean {
  if (url.protocol !== prefix.protocol || url.port !== prefix.port) return false;
  if (hostOf(url) !== hostOf(prefix)) return false;
  const p = prefix.pathname;
  if (p.endsWith('/')) return url.pathname.startsWith(p);
  return url.pathname === p || url.pathname.startsWith(`${p}/`);
}

export class OutboundPolicy {
  private constructor(
    private readonly urls: URL[],
    private readonly hosts: HostEntry[],
    private readonly cidrs: Cidr[],
  ) {}

  /** The policy of scaling.allow; a UserError names the first malformed entry. */
  static from(allow: AllowList): OutboundPolicy {
    const at = (list: string, i: number) => `scaling.allow.${list}[${i}]`;
    return new OutboundPolicy(
      allow.urls.map((u, i) => parseUrlEntry(u, at('urls', i))),
      allow.hosts.map((h, i) => parseHostEntry(h, at('hosts', i))),
      allow.cidrs.map((c, i) => {
        const parsed = parseCidr(c);
        if (!parsed) {
          throw new UserError(
            `${at('cidrs', i)}: ${JSON.stringify(c)} is not an IP address or CIDR (10.0.0.0/8, fd00::/8)`,
          );
        }
        return parsed;
      }),
    );
  }

  /** Whether any address is allowed by a CIDR (else a URL nothing lists is refused before DNS). */
  get listsAddresses(): boolean {
    return this.cidrs.length > 0;
  }

  grantOf(url: URL): Grant {
    const host = hostOf(url);
    const listed =
      this.urls.some((p) => underPrefix(url, p)) || this.hosts.some((h) => hostMatches(h, host));
    if (!listed) return 'none';
    return isIP(host) ? 'literal' : 'name';
  }

  /** Why annex may not connect to `address` for a URL with this grant; undefined when it may. */
  refusal(address: string, grant: Grant): string | undefined {
    const ip = parseIp(address);
    if (!ip) return 'is not an IP address';
    const special = specialRange(ip);
    if (special) {
      const named =
        grant === 'literal' || this.cidrs.some((c) => within(c, special.range) && contains(c, ip));
      return named
        ? undefined
        : `is ${special.what}, refused unless annex's scaling.allow names this address`;
    }
    if (grant !== 'none' || this.cidrs.some((c) => contains(c, ip))) return undefined;
    return "is not in annex's scaling.allow";
  }
}

/** How a refusal reads: `10.0.0.1 is …`, or `db.shop resolves to 10.0.0.1, which is …`. */
export const refusedText = (host: string, address: string, why: string): string =>
  isIP(host) ? `${host} ${why}` : `${host} resolves to ${address}, which ${why}`;

type Resolve = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolve: Resolve = (hostname, options, callback) =>
  dnsLookup(hostname, options, callback);

/**
 * The `lookup` for a source's socket: resolves as Node would, keeps only the addresses the
 * policy allows (the socket connects to one of those and nothing else), and fails with
 * OutboundRefused when none is left.
 */
export function guardedLookup(
  policy: OutboundPolicy,
  grant: Grant,
  resolve: Resolve = systemResolve,
): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '');
      let refused: string | undefined;
      const allowed = addresses.filter((a) => {
        const why = policy.refusal(a.address, grant);
        refused ??= why && refusedText(hostname, a.address, why);
        return !why;
      });
      const first = allowed[0];
      if (!first) {
        return callback(new OutboundRefused(refused ?? `${hostname} resolves to no address`), '');
      }
      if (options.all) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}
