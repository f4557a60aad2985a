// The ip and cidr libraries. Parse errors and String forms were printed by a Go program
// over net/netip (the Go the API server is built with); the wrapping is the libraries'.
import { describe, expect, it } from 'vitest';
import { parseCIDR } from './cidr.js';
import { parseIP } from './ip.js';
import { addrString, parseAddr, parsePrefix } from './netip.js';
import { compileExpression } from './rule.js';

const run = (text: string) => {
  const r = compileExpression(text, new Set()).run({});
  return r instanceof Error ? r.message : ((r as { message?: string })?.message ?? r);
};

describe('netip.ParseAddr', () => {
  it.each([
    ['1.2.3.4.5', 'IPv4 address too long'],
    ['1.2.3', 'IPv4 address too short'],
    ['01.2.3.4', 'IPv4 field has octet with leading zero'],
    ['1.2.3.256', 'IPv4 field has value >255'],
    ['1..2.3', 'IPv4 field must have at least one digit (at ".2.3")'],
    [' 1.2.3.4', 'unexpected character (at " 1.2.3.4")'],
    ['::1::', 'multiple :: in address (at ":")'],
    [
      '1:2:3:4:5:1.2.3.4',
      'embedded IPv4 address must replace the final 2 fields of the address (at "1.2.3.4")',
    ],
    ['12345::', 'each group must have 4 or less digits (at "12345::")'],
    ['1:::2', 'each colon-separated field must have at least one digit (at ":2")'],
    ['1:2:3:4:5:6:7:8:9', 'trailing garbage after address (at "9")'],
    ['1:2:3:4:5:6:7:8:', 'colon must be followed by more characters (at ":")'],
    ['fe80::1%', 'zone must be a non-empty string'],
    ['%eth0', 'missing IPv6 address'],
    ['abc', 'unable to parse IP'],
    ['', 'unable to parse IP'],
  ])('refuses %j: %s', (s, msg) => {
    expect(() => parseAddr(s)).toThrow(`ParseAddr(${JSON.stringify(s)}): ${msg}`);
  });

  it.each([
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    ['0:0:1:0:0:1:0:0', '::1:0:0:1:0:0'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['::1.2.3.4', '::102:304'],
    ['1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8'],
    ['::', '::'],
    ['10.0.0.1', '10.0.0.1'],
  ])('%s prints as %s', (s, want) => {
    expect(addrString(parseAddr(s))).toBe(want);
  });
});

describe('the libraries’ refusals', () => {
  it('refuses zones and IPv4-mapped IPv6 addresses', () => {
    expect(() => parseIP('fe80::1%eth0')).toThrow(
      'IP address "fe80::1%eth0" with zone value is not allowed',
    );
    expect(() => parseIP('::ffff:1.2.3.4')).toThrow(
      'IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed',
    );
    expect(() => parseCIDR('::ffff:1.2.3.0/120')).toThrow(
      'network address parse error during conversion from string: IPv4-mapped IPv6 address "::ffff:1.2.3.0/120" is not allowed',
    );
  });

  it.each([
    ['10.0.0.0', "no '/'"],
    ['10.0.0.0/33', 'prefix length out of range'],
    ['::1/129', 'prefix length out of range'],
    ['10.0.0.0/08', 'bad bits after slash: "08"'],
    ['10.0.0.0/+8', 'bad bits after slash: "+8"'],
    ['10.0.0.0/-1', 'bad bits after slash: "-1"'],
    ['10.0.0.0/', 'bad bits after slash: ""'],
    ['10.0.0.0/99999999999999999999', 'bad bits after slash: "99999999999999999999"'],
    ['fe80::%eth0/64', 'IPv6 zones cannot be present in a prefix'],
    ['x/8', 'ParseAddr("x"): unable to parse IP'],
  ])('ParsePrefix refuses %j: %s', (s, msg) => {
    expect(() => parsePrefix(s)).toThrow(`netip.ParsePrefix(${JSON.stringify(s)}): ${msg}`);
  });
});

describe('ip and cidr in CEL', () => {
  it.each([
    ["isIP('10.0.0.1') && !isIP('01.0.0.1') && !isIP('::ffff:1.2.3.4')", true],
    ["ip.isCanonical('2001:db8::1') && !ip.isCanonical('2001:DB8::1')", true],
    ["ip('10.0.0.1').family() == 4 && ip('::1').family() == 6", true],
    ["string(ip('2001:DB8:0:0:0:0:0:1'))", '2001:db8::1'],
    ["ip('2001:DB8::1') == ip('2001:db8::1')", true],
    ["ip('0.0.0.0').isUnspecified() && ip('::').isUnspecified()", true],
    ["ip('127.1.2.3').isLoopback() && ip('::1').isLoopback()", true],
    [
      "ip('169.254.1.1').isLinkLocalUnicast() && ip('febf::1').isLinkLocalUnicast() && !ip('fec0::1').isLinkLocalUnicast()",
      true,
    ],
    [
      "ip('224.0.0.1').isLinkLocalMulticast() && !ip('224.0.1.1').isLinkLocalMulticast() && ip('ff12::1').isLinkLocalMulticast()",
      true,
    ],
    [
      "ip('8.8.8.8').isGlobalUnicast() && !ip('255.255.255.255').isGlobalUnicast() && !ip('ff02::1').isGlobalUnicast()",
      true,
    ],
    ["isCIDR('10.0.0.0/8') && !isCIDR('10.0.0.0')", true],
    [
      "cidr('10.0.0.1/8').containsIP('10.255.0.1') && !cidr('10.0.0.0/8').containsIP(ip('::1'))",
      true,
    ],
    [
      "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.0.0.0/16').containsCIDR(cidr('10.0.0.0/8'))",
      true,
    ],
    ["cidr('::/0').containsCIDR('2001:db8::/32') && !cidr('0.0.0.0/0').containsCIDR('::/0')", true],
    ["string(cidr('10.0.0.1/8'))", '10.0.0.1/8'],
    ["string(cidr('10.0.0.1/8').masked())", '10.0.0.0/8'],
    ["cidr('10.0.0.1/8') != cidr('10.0.0.0/8')", true],
    ["string(cidr('10.0.0.1/8').ip())", '10.0.0.1'],
    ["cidr('2001:db8::/32').prefixLength()", 32n],
    ["['10.0.0.1'].all(ip, ip(ip).family() == 4)", true],
    // A namespace's name as a variable: its methods are methods.
    ["[ip('10.0.0.1')].all(ip, ip.family() == 4)", true],
    ['[[1]].all(lists, lists.size() == 1)', true],
  ])('%s → %s', (text, want) => {
    expect(run(text)).toBe(want);
  });

  it('fails with the API server words', () => {
    expect(run("ip('1.2.3')")).toBe(
      'IP Address "1.2.3" parse error during conversion from string: ParseAddr("1.2.3"): IPv4 address too short',
    );
    expect(run("cidr('1.2.3.4')")).toBe(
      `network address parse error during conversion from string: network address parse error during conversion from string: netip.ParsePrefix("1.2.3.4"): no '/'`,
    );
    // Go's %q: a character unicode.IsPrint refuses is escaped.
    expect(run("ip('1.2.3.4\\u00a0')")).toBe(
      'IP Address "1.2.3.4\\u00a0" parse error during conversion from string: ParseAddr("1.2.3.4\\u00a0"): unexpected character (at "\\u00a0")',
    );
    // The differential test found it: an invalid IP string is "no such overload" here.
    expect(run("cidr('10.0.0.0/8').containsIP('x')")).toBe('no such overload');
    expect(run("cidr('10.0.0.0/8').containsCIDR('x')")).toMatch(
      /netip.ParsePrefix\("x"\): no '\/'$/,
    );
  });

  it('refuses the global-only functions called as methods', () => {
    expect(() => compileExpression("'10.0.0.0/8'.cidr()", new Set())).toThrow(
      /no matching overload/,
    );
  });
});
