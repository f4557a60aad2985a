import type { LookupAddress } from 'node:dns';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../errors.js';
import { contains, parseCidr, parseIp } from './ip.js';
import {
  guardedLookup,
  OutboundPolicy,
  OutboundRefused,
  specialRange,
  type AllowList,
  type Grant,
} from './outbound.js';

const policy = (allow: Partial<AllowList>) =>
  OutboundPolicy.from({ urls: [], hosts: [], cidrs: [], ...allow });
const ip = (text: string) => parseIp(text)!;
const what = (text: string) => specialRange(ip(text))?.what;

describe('addresses and ranges', () => {
  it('parses IPv4, IPv6 (compressed, with a dotted tail) and maps ::ffff:a.b.c.d to IPv4', () => {
    expect(ip('10.1.2.3')).toEqual({ family: 4, value: 0x0a010203n });
    expect(ip('::1')).toEqual({ family: 6, value: 1n });
    expect(ip('2001:db8::8:1')).toEqual({ family: 6, value: 0x20010db8000000000000000000080001n });
    expect(ip('64:ff9b::1.2.3.4')).toEqual(ip('64:ff9b::102:304'));
    expect(ip('::ffff:169.254.169.254')).toEqual(ip('169.254.169.254'));
    expect(ip('0:0:0:0:0:ffff:a9fe:a9fe')).toEqual(ip('169.254.169.254'));
    expect(ip('fe80::1%eth0')).toEqual(ip('fe80::1'));
    for (const bad of ['', 'localhost', '1.2.3', '256.0.0.1', '[::1]', '::1/128']) {
      expect(parseIp(bad), bad).toBeUndefined();
    }
  });

  it('parses CIDRs, masks host bits, and reads an IPv4-mapped range as IPv4', () => {
    expect(parseCidr('10.1.2.3/8')).toEqual({ family: 4, base: 0x0a000000n, prefix: 8 });
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual(parseCidr('10.0.0.0/8'));
    expect(parseCidr('fd00::1')).toMatchObject({ prefix: 128 });
    for (const bad of ['10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.0/-1', 'x/8', '10/8']) {
      expect(parseCidr(bad), bad).toBeUndefined();
    }
    expect(contains(parseCidr('10.0.0.0/8')!, ip('10.255.0.1'))).toBe(true);
    expect(contains(parseCidr('10.0.0.0/8')!, ip('11.0.0.1'))).toBe(false);
    expect(contains(parseCidr('::/0')!, ip('127.0.0.1'))).toBe(false); // families never mix
  });

  it('knows the ranges annex refuses by default, in every form that reaches them', () => {
    const refused: [string, RegExp][] = [
      ['0.0.0.0', /this host/],
      ['0.1.2.3', /this host/],
      ['127.0.0.1', /^loopback$/],
      ['127.255.255.254', /^loopback$/],
      ['169.254.169.254', /^link-local \(cloud metadata/],
      ['169.254.0.1', /^link-local/],
      ['100.100.100.200', /Alibaba/],
      ['168.63.129.16', /Azure/],
      ['::', /unspecified/],
      ['::1', /^loopback$/],
      ['fe80::1', /^link-local$/],
      ['febf:ffff::1', /^link-local$/],
      ['fd00:ec2::254', /AWS/],
      ['::ffff:127.0.0.1', /^loopback$/],
      ['::ffff:169.254.169.254', /^link-local/],
      ['64:ff9b::a9fe:a9fe', /^link-local .*, in NAT64 form$/],
      ['64:ff9b::127.0.0.1', /^loopback, in NAT64 form$/],
      ['::169.254.169.254', /in IPv4-compatible form$/],
      ['::7f00:1', /^loopback, in IPv4-compatible form$/],
      ['2002:a9fe:a9fe::1', /^link-local .*, in 6to4 form$/],
      ['2002:7f00:1::', /^loopback, in 6to4 form$/],
    ];
    for (const [a, re] of refused) expect(what(a), a).toMatch(re);
    for (const a of [
      '10.0.0.1',
      '8.8.8.8',
      '100.100.100.201',
      '168.63.129.17',
      '169.255.0.1',
      '126.255.255.255',
      '1.0.0.0',
      'fec0::1',
      'fd00:ec2::253',
      '2001:db8::1',
      '64:ff9b::808:808',
      '2002:808:808::1',
      '::ffff:8.8.8.8',
    ]) {
      expect(what(a), a).toBeUndefined();
    }
  });

  it('treats an IPv4 address the same in its mapped, NAT64 and 6to4 forms', () => {
    fc.assert(
      fc.property(fc.ipV4(), (a) => {
        const v4 = what(a) !== undefined;
        expect(what(`::ffff:${a}`) !== undefined).toBe(v4);
        expect(what(`64:ff9b::${a}`) !== undefined).toBe(v4);
        const [b0, b1, b2, b3] = a.split('.').map((x) => Number(x).toString(16).padStart(2, '0'));
        expect(what(`2002:${b0}${b1}:${b2}${b3}::1`) !== undefined).toBe(v4);
      }),
    );
  });
});

describe('OutboundPolicy', () => {
  it('refuses a malformed entry in one line naming it', () => {
    const cases: [Partial<AllowList>, string][] = [
      [
        { cidrs: ['10.0.0.0/33'] },
        'scaling.allow.cidrs[0]: "10.0.0.0/33" is not an IP address or CIDR',
      ],
      [{ urls: ['https://p.svc/?q=1'] }, 'scaling.allow.urls[0]: "https://p.svc/?q=1" must be'],
      [{ urls: ['ftp://p.svc/'] }, 'scaling.allow.urls[0]'],
      [{ urls: ['https://u:p@p.svc/'] }, 'scaling.allow.urls[0]'],
      [
        { hosts: ['ok.svc', 'p.svc:9090'] },
        'scaling.allow.hosts[1]: "p.svc:9090" must be a host name',
      ],
      [{ hosts: ['*'] }, 'scaling.allow.hosts[0]'],
      [{ hosts: ['a.*.svc'] }, 'scaling.allow.hosts[0]'],
    ];
    for (const [allow, message] of cases) {
      expect(() => policy(allow)).toThrow(UserError);
      expect(() => policy(allow)).toThrow(message);
    }
  });

  it('grants a URL under a listed prefix (segment boundary, scheme, port) or with a listed host', () => {
    const p = policy({
      urls: [
        'http://prom.monitoring.svc:9090/api/v1/',
        'https://queue.shop/stats',
        'http://10.0.0.7/m',
      ],
      hosts: ['metrics.shop.svc', '*.data.svc', '::1'],
    });
    const grant = (u: string) => p.grantOf(new URL(u));
    expect(grant('http://prom.monitoring.svc:9090/api/v1/query?x=1')).toBe('name');
    expect(grant('http://PROM.monitoring.svc.:9090/api/v1/query')).toBe('name');
    expect(grant('http://prom.monitoring.svc:9090/api/v1/../../admin')).toBe('none');
    expect(grant('http://prom.monitoring.svc:9090/api/v2/query')).toBe('none');
    expect(grant('https://prom.monitoring.svc:9090/api/v1/query')).toBe('none');
    expect(grant('http://prom.monitoring.svc:9091/api/v1/query')).toBe('none');
    expect(grant('https://queue.shop/stats')).toBe('name');
    expect(grant('https://queue.shop:443/stats/today')).toBe('name');
    expect(grant('https://queue.shop/statsx')).toBe('none');
    expect(grant('http://10.0.0.7/m')).toBe('literal');
    expect(grant('http://metrics.shop.svc:1234/anything')).toBe('name');
    expect(grant('https://a.b.data.svc/x')).toBe('name');
    expect(grant('https://data.svc/x')).toBe('none');
    expect(grant('https://evildata.svc/x')).toBe('none');
    expect(grant('http://[0:0::1]:8080/')).toBe('literal');
    expect(grant('http://metrics.shop.svc.evil.com/')).toBe('none');
  });

  it('refuses a refused range unless an entry names the address, whatever a name or a broad CIDR allows', () => {
    const wide = policy({ cidrs: ['0.0.0.0/0', '::/0'] });
    const narrow = policy({ cidrs: ['169.254.169.254/32', '127.0.0.0/8'] });
    const cases: [OutboundPolicy, string, Grant, boolean][] = [
      [policy({}), '10.0.0.1', 'none', false],
      [policy({}), '10.0.0.1', 'name', true],
      [policy({}), '10.0.0.1', 'literal', true],
      [policy({}), '169.254.169.254', 'name', false],
      [policy({}), '169.254.169.254', 'literal', true],
      [wide, '10.0.0.1', 'none', true],
      [wide, '169.254.169.254', 'none', false],
      [wide, '::ffff:169.254.169.254', 'name', false],
      [wide, '::1', 'name', false],
      [narrow, '169.254.169.254', 'name', true],
      [narrow, '169.254.169.253', 'name', false],
      [narrow, '127.0.0.53', 'none', true],
      [narrow, '64:ff9b::a9fe:a9fe', 'name', false],
      [policy({ cidrs: ['64:ff9b::a9fe:a9fe/128'] }), '64:ff9b::a9fe:a9fe', 'none', true],
      [narrow, '10.0.0.1', 'none', false],
    ];
    for (const [p, address, grant, allowed] of cases) {
      expect(p.refusal(address, grant) === undefined, `${address} ${grant}`).toBe(allowed);
    }
    expect(policy({}).refusal('10.0.0.1', 'none')).toBe("is not in annex's scaling.allow");
  });
});

describe('guardedLookup', () => {
  const answers: Record<string, LookupAddress[]> = {
    'mixed.test': [
      { address: '169.254.169.254', family: 4 },
      { address: '10.0.0.5', family: 4 },
      { address: 'fe80::1', family: 6 },
    ],
    'meta.test': [{ address: '169.254.169.254', family: 4 }],
    'local.test': [
      { address: '::1', family: 6 },
      { address: '127.0.0.1', family: 4 },
    ],
  };
  const resolve = (
    host: string,
    _o: unknown,
    cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
  ) => {
    const a = answers[host];
    if (!a)
      cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }), []);
    else cb(null, a);
  };
  const lookup = (p: OutboundPolicy, host: string, all: boolean) =>
    new Promise<{ err: Error | null; address: unknown; family?: number }>((r) =>
      guardedLookup(p, 'name', resolve)(host, { all }, (err, address, family) =>
        r({ err, address, family }),
      ),
    );

  it('hands the socket only allowed answers, in both of the shapes Node asks for', async () => {
    expect(await lookup(policy({}), 'mixed.test', true)).toMatchObject({
      err: null,
      address: [{ address: '10.0.0.5', family: 4 }],
    });
    expect(await lookup(policy({}), 'mixed.test', false)).toMatchObject({
      err: null,
      address: '10.0.0.5',
      family: 4,
    });
  });

  it('fails with the first refusal when nothing is left, and passes DNS errors through', async () => {
    const meta = await lookup(policy({}), 'meta.test', true);
    expect(meta.err).toBeInstanceOf(OutboundRefused);
    expect(meta.err!.message).toBe(
      "meta.test resolves to 169.254.169.254, which is link-local (cloud metadata: 169.254.169.254), refused unless annex's scaling.allow names this address",
    );
    expect((await lookup(policy({}), 'nope.test', false)).err).toMatchObject({ code: 'ENOTFOUND' });
    const named = await lookup(policy({ cidrs: ['169.254.169.254/32'] }), 'meta.test', false);
    expect(named).toMatchObject({ err: null, address: '169.254.169.254' });
  });

  describe('as a socket uses it', () => {
    let server: Server;
    let port: number;
    let connections = 0;
    beforeAll(async () => {
      server = createServer((_q, res) => res.end('ok'));
      server.on('connection', () => connections++);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => {
      server.closeAllConnections();
      server.close();
    });
    const fetchVia = (p: OutboundPolicy) =>
      new Promise<string>((resolveGet, reject) => {
        const req = get(
          { host: 'local.test', port, agent: false, lookup: guardedLookup(p, 'name', resolve) },
          (res) => {
            res.resume();
            res.on('end', () => resolveGet(String(res.statusCode)));
          },
        );
        req.on('error', reject);
      });

    it('never connects to a refused answer (and does connect once the admin names it)', async () => {
      await expect(fetchVia(policy({ hosts: ['local.test'] }))).rejects.toBeInstanceOf(
        OutboundRefused,
      );
      expect(connections).toBe(0);
      expect(await fetchVia(policy({ cidrs: ['127.0.0.1/32'] }))).toBe('200');
      expect(connections).toBe(1);
    });
  });
});
