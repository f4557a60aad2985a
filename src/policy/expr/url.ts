// Kubernetes' url library (k8s.io/apiserver/pkg/cel/library/urls.go, pkg/cel/url.go) over
// expr/gourl.ts, a port of Go's net/url. url() checks with ParseRequestURI (absolute URLs
// and absolute paths only) and then parses with Parse (which cuts the fragment); values are
// equal when their URL.String() forms are.
import { celFunc, celMethod, CelScalar, listType, mapType } from '@bufbuild/cel';
import {
  escapedPath,
  fromBytes,
  hostname,
  parseRequestURI,
  parseURL,
  port,
  query,
  toBytes,
  urlString,
  type GoURL,
} from './gourl.js';
import { opaqueType } from './opaque.js';

/** The library's url(): the parsed URL, or its error text. */
export function parseLibraryURL(s: string): GoURL {
  const b = toBytes(s);
  try {
    parseRequestURI(b);
    return parseURL(b);
  } catch (e) {
    throw new Error(`URL parse error during conversion from string: ${(e as Error).message}`);
  }
}

/** kubernetes.URL values: equal when their String() forms are. */
export const URL = opaqueType<GoURL>('kubernetes.URL');
const { BOOL, STRING } = CelScalar;

const getter = (name: string, f: (u: GoURL) => string) =>
  celMethod(name, URL.type, [], STRING, function () {
    return fromBytes(f(URL.unwrap(this)));
  });

export const url = [
  celFunc('url', [STRING], URL.type, (s) => {
    const u = parseLibraryURL(s);
    return URL.wrap(u, urlString(u));
  }),
  celFunc('isURL', [STRING], BOOL, (s) => {
    try {
      parseRequestURI(toBytes(s));
      return true;
    } catch {
      return false;
    }
  }),
  getter('getScheme', (u) => u.scheme),
  getter('getHost', (u) => u.host),
  getter('getHostname', hostname),
  getter('getPort', port),
  getter('getEscapedPath', escapedPath),
  celMethod('getQuery', URL.type, [], mapType(STRING, listType(STRING)), function () {
    const m = new Map<string, string[]>();
    for (const [k, vs] of query(URL.unwrap(this))) m.set(fromBytes(k), vs.map(fromBytes));
    return m;
  }),
];
