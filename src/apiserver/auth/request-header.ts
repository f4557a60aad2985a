// The identity a front proxy asserts in X-Remote-* headers (k8s.io/apiserver's
// headerrequest authenticator). Only ever called after the connection's certificate
// proved to be the front proxy's; the headers are removed either way.
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestHeaderConfig } from './authentication-config.js';
import type { UserInfo } from './types.js';

/** Header names used when the cluster publishes none: always stripped, never trusted. */
const DEFAULT_NAMES = ['x-remote-user', 'x-remote-uid', 'x-remote-group'];
const DEFAULT_PREFIXES = ['x-remote-extra-'];

/** rawHeaders pairs, keeping repeated headers as separate values (one group per header). */
function pairs(rawHeaders: readonly string[]): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    out.push([rawHeaders[i]!.toLowerCase(), rawHeaders[i + 1]!]);
  }
  return out;
}

/** Go's url.PathUnescape; the raw key is kept when it is not valid escaping. */
function pathUnescape(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The asserted user, or undefined when no username header is set (the authenticator abstains). */
export function identityFromHeaders(
  rawHeaders: readonly string[],
  cfg: Pick<
    RequestHeaderConfig,
    'usernameHeaders' | 'uidHeaders' | 'groupHeaders' | 'extraHeaderPrefixes'
  >,
): UserInfo | undefined {
  const all = pairs(rawHeaders);
  // First value of the first listed header that has a non-empty one (http.Header.Get).
  const first = (names: string[]) => {
    for (const n of names) {
      const v = all.find(([k]) => k === n.toLowerCase())?.[1];
      if (v) return v;
    }
    return '';
  };
  const name = first(cfg.usernameHeaders);
  if (!name) return undefined;
  const uid = first(cfg.uidHeaders);
  const groups: string[] = [];
  for (const n of cfg.groupHeaders) {
    for (const [k, v] of all) if (k === n.toLowerCase() && v !== '') groups.push(v);
  }
  const extra: Record<string, string[]> = {};
  for (const prefix of cfg.extraHeaderPrefixes) {
    const p = prefix.toLowerCase();
    for (const [k, v] of all) {
      if (!k.startsWith(p)) continue;
      const key = pathUnescape(k.slice(p.length));
      (extra[key] ??= []).push(v);
    }
  }
  return { name, ...(uid ? { uid } : {}), groups, extra };
}

/** Deletes every identity header (configured and default names) from the parsed headers. */
export function stripIdentityHeaders(
  headers: IncomingHttpHeaders,
  cfg?: Pick<
    RequestHeaderConfig,
    'usernameHeaders' | 'uidHeaders' | 'groupHeaders' | 'extraHeaderPrefixes'
  >,
): void {
  const names = new Set(DEFAULT_NAMES);
  for (const n of [
    ...(cfg?.usernameHeaders ?? []),
    ...(cfg?.uidHeaders ?? []),
    ...(cfg?.groupHeaders ?? []),
  ]) {
    names.add(n.toLowerCase());
  }
  const prefixes = [
    ...DEFAULT_PREFIXES,
    ...(cfg?.extraHeaderPrefixes ?? []).map((p) => p.toLowerCase()),
  ];
  for (const k of Object.keys(headers)) {
    const lk = k.toLowerCase();
    if (names.has(lk) || prefixes.some((p) => lk.startsWith(p))) delete headers[k];
  }
}
