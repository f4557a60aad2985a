// A port of the parts of Go's net/url (go1.26.8, the Go the pinned kube-apiserver is built
// with) that Kubernetes' url CEL library calls: ParseRequestURI and Parse, and the URL's
// Hostname, Port, EscapedPath, Query and String. Go works on bytes, so this works on
// "byte strings" (one char per UTF-8 byte); what leaves it is decoded as Go's JSON would
// (each invalid byte a U+FFFD). Node's WHATWG URL is no substitute: it normalizes what Go
// keeps (`HTTP://A/%7e` stays as written in Go) and accepts what Go refuses.
// GODEBUG defaults are go1.26's (Kubernetes' go.mod: `godebug default=go1.26`):
// urlstrictcolons on, at most 10,000 query parameters.
import { goQuote, goString } from '../../admission/names/index.js';
import { parseAddrBytes } from './netip.js';

/** A JavaScript string as its UTF-8 bytes, one char per byte. */
export function toBytes(s: string): string {
  let out = '';
  for (const b of new TextEncoder().encode(s)) out += String.fromCharCode(b);
  return out;
}

const asArray = (b: string) => Uint8Array.from(b, (c) => c.charCodeAt(0));
/** Bytes back to a JavaScript string, as Go's JSON writes them. */
export const fromBytes = (b: string): string => goString(asArray(b));
/** Go's %q of bytes. */
const quote = (b: string) => goQuote(asArray(b));

type Mode =
  'path' | 'pathSegment' | 'host' | 'zone' | 'userPassword' | 'queryComponent' | 'fragment';

const alnum = (c: string) =>
  (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
const ishex = (c: string | undefined) =>
  c !== undefined && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'));
const unhex = (c: string) => parseInt(c, 16);

/** net/url's shouldEscape (gen_encoding_table.go's reference version of its table). */
function shouldEscape(c: string, mode: Mode): boolean {
  if (alnum(c)) return false;
  if ((mode === 'host' || mode === 'zone') && `!$&'()*+,;=:[]<>"`.includes(c)) return false;
  if ('-_.~'.includes(c)) return false;
  if ('$&+,/:;=?@'.includes(c)) {
    switch (mode) {
      case 'path':
        return c === '?';
      case 'pathSegment':
        return '/;,?'.includes(c);
      case 'userPassword':
        return '@/?:'.includes(c);
      case 'queryComponent':
        return true;
      case 'fragment':
        return false;
      default:
    }
  }
  if (mode === 'fragment' && '!()*'.includes(c)) return false;
  return true;
}

class GoError extends Error {}
const escapeError = (s: string) => new GoError(`invalid URL escape ${quote(s)}`);

function unescape(s: string, mode: Mode): string {
  let n = 0;
  let hasPlus = false;
  for (let i = 0; i < s.length;) {
    const c = s[i]!;
    if (c === '%') {
      n++;
      if (i + 2 >= s.length || !ishex(s[i + 1]) || !ishex(s[i + 2]))
        throw escapeError(s.slice(i, i + 3));
      const v = unhex(s[i + 1]!) * 16 + unhex(s[i + 2]!);
      if (mode === 'host' && unhex(s[i + 1]!) < 8 && s.slice(i, i + 3) !== '%25')
        throw escapeError(s.slice(i, i + 3));
      if (
        mode === 'zone' &&
        s.slice(i, i + 3) !== '%25' &&
        v !== 0x20 &&
        shouldEscape(String.fromCharCode(v), 'host')
      )
        throw escapeError(s.slice(i, i + 3));
      i += 3;
    } else {
      if (c === '+') hasPlus = mode === 'queryComponent';
      else if ((mode === 'host' || mode === 'zone') && c < '\x80' && shouldEscape(c, mode))
        throw new GoError(`invalid character ${quote(c)} in host name`);
      i++;
    }
  }
  if (n === 0 && !hasPlus) return s;
  let t = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '%') {
      t += String.fromCharCode(unhex(s[i + 1]!) * 16 + unhex(s[i + 2]!));
      i += 2;
    } else t += c === '+' && mode === 'queryComponent' ? ' ' : c;
  }
  return t;
}

function escape(s: string, mode: Mode): string {
  let t = '';
  for (const c of s) {
    if (c === ' ' && mode === 'queryComponent') t += '+';
    else if (shouldEscape(c, mode))
      t += `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
    else t += c;
  }
  return t;
}

interface Userinfo {
  username: string;
  password: string;
  passwordSet: boolean;
}

/** Go's url.URL, in bytes. */
export interface GoURL {
  scheme: string;
  opaque: string;
  user: Userinfo | null;
  host: string;
  path: string;
  rawPath: string;
  fragment: string;
  rawFragment: string;
  rawQuery: string;
  forceQuery: boolean;
  omitHost: boolean;
}

function getScheme(raw: string): [string, string] {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) continue;
    if ((c >= '0' && c <= '9') || c === '+' || c === '-' || c === '.') {
      if (i === 0) return ['', raw];
    } else if (c === ':') {
      if (i === 0) throw new GoError('missing protocol scheme');
      return [raw.slice(0, i), raw.slice(i + 1)];
    } else return ['', raw];
  }
  return ['', raw];
}

/** strings.Cut. */
function cut(s: string, sep: string): [string, string, boolean] {
  const i = s.indexOf(sep);
  return i < 0 ? [s, '', false] : [s.slice(0, i), s.slice(i + sep.length), true];
}

function parse(raw: string, viaRequest: boolean): GoURL {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(raw)) throw new GoError('net/url: invalid control character in URL');
  if (raw === '' && viaRequest) throw new GoError('empty url');
  const url: GoURL = {
    scheme: '',
    opaque: '',
    user: null,
    host: '',
    path: '',
    rawPath: '',
    fragment: '',
    rawFragment: '',
    rawQuery: '',
    forceQuery: false,
    omitHost: false,
  };
  if (raw === '*') return { ...url, path: '*' };
  const [scheme, afterScheme] = getScheme(raw);
  url.scheme = scheme.toLowerCase();
  let rest = afterScheme;
  if (rest.endsWith('?') && rest.indexOf('?') === rest.length - 1) {
    url.forceQuery = true;
    rest = rest.slice(0, -1);
  } else [rest, url.rawQuery] = cut(rest, '?');
  if (!rest.startsWith('/')) {
    if (url.scheme !== '') return { ...url, opaque: rest };
    if (viaRequest) throw new GoError('invalid URI for request');
    if (cut(rest, '/')[0].includes(':'))
      throw new GoError('first path segment in URL cannot contain colon');
  }
  if ((url.scheme !== '' || (!viaRequest && !rest.startsWith('///'))) && rest.startsWith('//')) {
    let authority = rest.slice(2);
    rest = '';
    const i = authority.indexOf('/');
    if (i >= 0) [authority, rest] = [authority.slice(0, i), authority.slice(i)];
    [url.user, url.host] = parseAuthority(url.scheme, authority);
  } else if (url.scheme !== '' && rest.startsWith('/')) url.omitHost = true;
  url.path = unescape(rest, 'path');
  url.rawPath = escape(url.path, 'path') === rest ? '' : rest;
  return url;
}

function parseAuthority(scheme: string, authority: string): [Userinfo | null, string] {
  const i = authority.lastIndexOf('@');
  const host = parseHost(scheme, i < 0 ? authority : authority.slice(i + 1));
  if (i < 0) return [null, host];
  const userinfo = authority.slice(0, i);
  if (!/^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(userinfo))
    throw new GoError('net/url: invalid userinfo');
  const [name, password, set] = cut(userinfo, ':');
  return [
    {
      username: unescape(name, 'userPassword'),
      password: set ? unescape(password, 'userPassword') : '',
      passwordSet: set,
    },
    host,
  ];
}

/** validOptionalPort: empty, or `:` and digits. */
const validOptionalPort = (port: string) => /^(:[0-9]*)?$/.test(port);

function parseHost(scheme: string, host: string): string {
  const open = host.lastIndexOf('[');
  if (open > 0) throw new GoError('invalid IP-literal');
  if (open === 0) {
    const close = host.lastIndexOf(']');
    if (close < 0) throw new GoError("missing ']' in host");
    const colonPort = host.slice(close + 1);
    if (!validOptionalPort(colonPort))
      throw new GoError(`invalid port ${quote(colonPort)} after host`);
    const unescapedColonPort = unescape(colonPort, 'host');
    const hostname = host.slice(1, close);
    const zone = hostname.indexOf('%25');
    const unescaped =
      zone >= 0
        ? unescape(hostname.slice(0, zone), 'host') + unescape(hostname.slice(zone), 'zone')
        : unescape(hostname, 'host');
    let v4: boolean;
    try {
      v4 = parseAddrBytes(unescaped, quote).v4;
    } catch (e) {
      throw new GoError(`invalid host: ${(e as Error).message}`);
    }
    if (v4) throw new GoError('invalid IP-literal');
    return `[${unescaped}]${unescapedColonPort}`;
  }
  let i = host.indexOf(':');
  if (i !== -1) {
    const last = host.lastIndexOf(':');
    // urlstrictcolons: only http and https refuse more than one colon.
    if (last !== i && scheme !== 'http' && scheme !== 'https') i = last;
    const colonPort = host.slice(i);
    if (!validOptionalPort(colonPort))
      throw new GoError(`invalid port ${quote(colonPort)} after host`);
  }
  return unescape(host, 'host');
}

const wrap = <T>(raw: string, f: () => T): T => {
  try {
    return f();
  } catch (e) {
    if (e instanceof GoError) throw new Error(`parse ${quote(raw)}: ${e.message}`);
    throw e;
  }
};

/** url.ParseRequestURI; throws Go's *url.Error text. */
export const parseRequestURI = (raw: string): GoURL => wrap(raw, () => parse(raw, true));

/** url.Parse; throws Go's *url.Error text. */
export function parseURL(raw: string): GoURL {
  const [u, frag] = cut(raw, '#');
  const url = wrap(u, () => parse(u, false));
  if (frag === '') return url;
  url.fragment = wrap(raw, () => unescape(frag, 'fragment'));
  url.rawFragment = escape(url.fragment, 'fragment') === frag ? '' : frag;
  return url;
}

/** validEncoded: no byte that needs escaping, sub-delims, `[`, `]` and `%` allowed. */
function validEncoded(s: string, mode: Mode): boolean {
  for (const c of s) if (!"!$&'()*+,;=:@[]%".includes(c) && shouldEscape(c, mode)) return false;
  return true;
}

/** EscapedPath, EscapedFragment: the raw form when it is a valid escaping of the decoded one. */
function escaped(decoded: string, raw: string, mode: Mode): string {
  if (raw !== '' && validEncoded(raw, mode)) {
    try {
      if (unescape(raw, mode) === decoded) return raw;
    } catch {
      // fall through to the computed escaping
    }
  }
  if (mode === 'path' && decoded === '*') return '*';
  return escape(decoded, mode);
}

export const escapedPath = (u: GoURL) => escaped(u.path, u.rawPath, 'path');

function splitHostPort(hostPort: string): [string, string] {
  let host = hostPort;
  let port = '';
  const colon = host.lastIndexOf(':');
  if (colon !== -1 && validOptionalPort(host.slice(colon)))
    [host, port] = [host.slice(0, colon), host.slice(colon + 1)];
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return [host, port];
}

export const hostname = (u: GoURL) => splitHostPort(u.host)[0];
export const port = (u: GoURL) => splitHostPort(u.host)[1];

/** URL.Query: ParseQuery's values, malformed pairs skipped. */
export function query(u: GoURL): Map<string, string[]> {
  const m = new Map<string, string[]>();
  let q = u.rawQuery;
  if (q.split('&').length > 10000) return m;
  while (q !== '') {
    let pair;
    [pair, q] = cut(q, '&');
    if (pair.includes(';') || pair === '') continue;
    const [k, v] = cut(pair, '=');
    let key, value;
    try {
      key = unescape(k, 'queryComponent');
      value = unescape(v, 'queryComponent');
    } catch {
      continue;
    }
    m.set(key, [...(m.get(key) ?? []), value]);
  }
  return m;
}

/** URL.String. */
export function urlString(u: GoURL): string {
  let buf = u.scheme === '' ? '' : `${u.scheme}:`;
  if (u.opaque !== '') buf += u.opaque;
  else {
    if (u.scheme !== '' || u.host !== '' || u.user !== null) {
      if (!(u.omitHost && u.host === '' && u.user === null)) {
        if (u.host !== '' || u.path !== '' || u.user !== null) buf += '//';
        if (u.user !== null) {
          buf += escape(u.user.username, 'userPassword');
          if (u.user.passwordSet) buf += `:${escape(u.user.password, 'userPassword')}`;
          buf += '@';
        }
        buf += escape(u.host, 'host');
      }
    }
    const path = escapedPath(u);
    if (path !== '' && path[0] !== '/' && u.host !== '') buf += '/';
    if (buf === '' && cut(path, '/')[0].includes(':')) buf += './';
    buf += path;
  }
  if (u.forceQuery || u.rawQuery !== '') buf += `?${u.rawQuery}`;
  if (u.fragment !== '') buf += `#${escaped(u.fragment, u.rawFragment, 'fragment')}`;
  return buf;
}
