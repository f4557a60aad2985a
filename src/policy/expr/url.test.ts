// The url library against Go. test/fixtures/go-url.json was printed by
// scripts/url-fixture/main.go (`go run scripts/url-fixture/main.go > test/fixtures/go-url.json`,
// go1.26.8 offline, the Go the pinned kube-apiserver is built with): 600 inputs — edge cases
// (IPv6 hosts and zones, ports, percent-escapes valid and invalid, userinfo, opaque, empty,
// relative, control characters, spaces, unicode) and seeded combinations of schemes,
// authorities, paths, queries and fragments — each with what urls.go answers: isURL, the
// url() error, or the getters and URL.String() (the equality key).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { escapedPath, fromBytes, hostname, port, query, urlString } from './gourl.js';
import { compileExpression } from './rule.js';
import { parseLibraryURL } from './url.js';

interface Case {
  in: string;
  isURL: boolean;
  error?: string;
  scheme?: string;
  host?: string;
  hostname?: string;
  port?: string;
  escapedPath?: string;
  query?: Record<string, string[]>;
  string?: string;
}

const cases = JSON.parse(
  readFileSync(new URL('../../../test/fixtures/go-url.json', import.meta.url), 'utf8'),
) as Case[];

function annex(s: string): Case {
  const out: Case = { in: s, isURL: run(`isURL(${JSON.stringify(s)})`) === true };
  let u;
  try {
    u = parseLibraryURL(s);
  } catch (e) {
    return { ...out, error: (e as Error).message };
  }
  const q = query(u);
  return {
    ...out,
    ...Object.fromEntries(
      Object.entries({
        scheme: u.scheme,
        host: u.host,
        hostname: hostname(u),
        port: port(u),
        escapedPath: escapedPath(u),
        string: urlString(u),
      })
        .filter(([, v]) => v !== '') // omitempty, as the Go program's JSON
        .map(([k, v]) => [k, fromBytes(v)]),
    ),
    ...(q.size
      ? {
          query: Object.fromEntries(
            [...q]
              .sort(([a], [b]) => (a < b ? -1 : 1))
              .map(([k, vs]) => [fromBytes(k), vs.map(fromBytes)]),
          ),
        }
      : {}),
  };
}

const run = (text: string) => {
  const r = compileExpression(text, new Set()).run({});
  return r instanceof Error ? r.message : ((r as { message?: string })?.message ?? r);
};

describe('net/url as the url library calls it', () => {
  it.each(cases.map((c) => [c.in, c]))('%j', (s, want) => {
    expect(annex(s as string)).toEqual(want);
  });
});

describe('the url library in CEL', () => {
  it.each([
    ["url('https://a/b?x=1&x=2&y').getQuery() == {'x': ['1', '2'], 'y': ['']}", true],
    [
      "url('https://[::1]:8443/p').getHostname() + '|' + url('https://[::1]:8443/p').getPort()",
      '::1|8443',
    ],
    [
      "url('/a%2fb').getEscapedPath() + url('/a%2fb').getScheme() + url('/a%2fb').getHost()",
      '/a%2fb',
    ],
    // Equality is URL.String(): the scheme is lowercased, the rest kept as written.
    ["url('HTTP://A/%7e') == url('http://A/%7e')", true],
    ["url('http://a/%7e') == url('http://a/~')", false],
    ["url('https://a/b#x') == url('https://a/b')", false],
    ["isURL('https://a') && !isURL('a/b') && !isURL('')", true],
    [
      "url('a/b')",
      'URL parse error during conversion from string: parse "a/b": invalid URI for request',
    ],
  ])('%s', (text, want) => {
    expect(run(text)).toEqual(want);
  });

  it('is global only for url() and isURL()', () => {
    expect(() => compileExpression("'https://a'.url()", new Set())).toThrow(
      "found no matching overload for 'url' called as a method",
    );
  });
});
