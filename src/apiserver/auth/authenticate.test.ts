import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Koa from 'koa';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_EXT, opensslCa, opensslLeaf } from '../../devcluster/pki.js';
import { StatusError } from '../../core/status.js';
import { authenticate } from './authenticate.js';
import { parseAuthenticationConfig, type AuthenticationConfig } from './authentication-config.js';
import type { UserInfo } from './types.js';
import { subjectOf, verifyClientChain } from './x509.js';

// A throwaway PKI made by openssl (an independent implementation): two roots, an
// intermediate, and leaves with the usages and names the checks care about.
let dir: string;
const certs: Record<string, X509Certificate> = {};
const pem = (n: string) => readFileSync(join(dir, `${n}.crt`), 'utf8');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'annex-auth-'));
  const ca = (name: string) => opensslCa(dir, name, name);
  const leaf = (name: string, signer: string, subject: string, ext: string[]) =>
    opensslLeaf(dir, name, signer, subject, ext);
  ca('front-proxy-ca');
  ca('client-ca');
  leaf('proxy', 'front-proxy-ca', '/CN=front-proxy-client', CLIENT_EXT);
  leaf('stranger', 'front-proxy-ca', '/CN=someone-else', CLIENT_EXT);
  leaf('server-only', 'front-proxy-ca', '/CN=front-proxy-client', ['extendedKeyUsage=serverAuth']);
  leaf('admin', 'client-ca', '/O=system:masters/O=team\\, blue/CN=annex-admin', CLIENT_EXT);
  leaf('inter', 'client-ca', '/CN=intermediate', [
    'basicConstraints=critical,CA:TRUE',
    'keyUsage=critical,keyCertSign',
  ]);
  leaf('deep', 'inter', '/CN=deep-user', CLIENT_EXT);
  for (const n of [
    'front-proxy-ca',
    'client-ca',
    'proxy',
    'stranger',
    'server-only',
    'admin',
    'inter',
    'deep',
  ]) {
    certs[n] = new X509Certificate(pem(n));
  }
}, 30_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const c = (n: string) => certs[n]!;

describe('verifyClientChain', () => {
  it('accepts a leaf signed by the root and returns CN and every O', () => {
    expect(verifyClientChain([c('admin')], [c('client-ca')])).toEqual({
      ok: true,
      commonName: 'annex-admin',
      organizations: ['system:masters', 'team, blue'],
    });
  });

  it('tells the CAs apart: a front-proxy leaf does not chain to the client CA', () => {
    expect(verifyClientChain([c('proxy')], [c('client-ca')])).toEqual({
      ok: false,
      error: 'x509: certificate signed by unknown authority',
    });
    expect(verifyClientChain([c('proxy')], [c('front-proxy-ca')]).ok).toBe(true);
  });

  it('follows presented intermediates, but not without them', () => {
    expect(verifyClientChain([c('deep'), c('inter')], [c('client-ca')])).toMatchObject({
      ok: true,
      commonName: 'deep-user',
    });
    expect(verifyClientChain([c('deep')], [c('client-ca')]).ok).toBe(false);
  });

  it('checks the dates and the clientAuth usage', () => {
    const later = Date.now() + 5 * 86_400_000;
    expect(verifyClientChain([c('proxy')], [c('front-proxy-ca')], later)).toEqual({
      ok: false,
      error: 'x509: certificate has expired or is not yet valid',
    });
    expect(verifyClientChain([c('server-only')], [c('front-proxy-ca')])).toEqual({
      ok: false,
      error: 'x509: certificate specifies an incompatible key usage',
    });
  });

  it('reads the subject of the CA itself', () => {
    expect(subjectOf(c('client-ca'))).toEqual({ commonName: 'client-ca', organizations: [] });
  });
});

// --- the middleware, with fake sockets carrying real certificates ---

function socketWith(chain: X509Certificate[]) {
  // getPeerCertificate(true): a linked list through issuerCertificate, {} when no cert.
  type Peer = { raw?: Buffer; fingerprint256?: string; issuerCertificate?: Peer };
  let head: Peer = {};
  for (let i = chain.length - 1; i >= 0; i--) {
    const cert = chain[i]!;
    head = {
      raw: cert.raw,
      fingerprint256: cert.fingerprint256,
      ...(head.raw ? { issuerCertificate: head } : {}),
    };
  }
  return { getPeerCertificate: () => head };
}

function ctxFor(opts: { chain?: X509Certificate[]; headers?: [string, string][]; path?: string }) {
  const raw = (opts.headers ?? []).flat();
  const headers: Record<string, string> = {};
  for (const [k, v] of opts.headers ?? []) {
    const lk = k.toLowerCase();
    headers[lk] = headers[lk] ? `${headers[lk]}, ${v}` : v;
  }
  return {
    req: { rawHeaders: raw, headers, socket: socketWith(opts.chain ?? []) },
    path: opts.path ?? '/apis/metrics.annex.dev/v1beta1/nodes',
    get: (n: string) => headers[n.toLowerCase()] ?? '',
    state: {} as { user?: UserInfo },
  };
}

const silent = pino({ level: 'silent' });

describe('authenticate', () => {
  let config: AuthenticationConfig;
  const tokens = {
    seen: [] as string[],
    review: async (t: string) => {
      tokens.seen.push(t);
      return t === 'good'
        ? {
            name: 'system:serviceaccount:ns:default',
            groups: ['system:serviceaccounts'],
            extra: {},
          }
        : null;
    },
  };
  beforeAll(() => {
    config = parseAuthenticationConfig({
      'client-ca-file': pem('client-ca'),
      'requestheader-client-ca-file': pem('front-proxy-ca'),
      'requestheader-allowed-names': '["front-proxy-client"]',
      'requestheader-username-headers': '["X-Remote-User"]',
      'requestheader-group-headers': '["X-Remote-Group"]',
      'requestheader-extra-headers-prefix': '["X-Remote-Extra-"]',
    });
  });

  async function run(opts: Parameters<typeof ctxFor>[0]) {
    const ctx = ctxFor(opts);
    const mw = authenticate({ config: { current: () => config }, tokens, log: silent });
    let reached = false;
    try {
      await mw(ctx as unknown as Koa.Context, async () => {
        reached = true;
      });
    } catch (e) {
      if (e instanceof StatusError)
        return { status: e.status.code, message: e.status.message, ctx };
      throw e;
    }
    return { status: reached ? 200 : 0, user: ctx.state.user, ctx };
  }

  it('trusts X-Remote-* only behind the front-proxy certificate, and strips them', async () => {
    const r = await run({
      chain: [c('proxy')],
      headers: [
        ['X-Remote-User', 'jane'],
        ['X-Remote-Group', 'dev'],
        ['X-Remote-Group', 'ops, eu'],
        ['X-Remote-Extra-Scopes%2fa', 'x'],
        ['Accept', 'application/json'],
      ],
    });
    expect(r.user).toEqual({
      name: 'jane',
      groups: ['dev', 'ops, eu', 'system:authenticated'],
      extra: { 'scopes/a': ['x'] },
    });
    expect(Object.keys(r.ctx.req.headers)).toEqual(['accept']);
  });

  it('answers 401 to forged headers without a certificate, and strips them', async () => {
    const r = await run({
      headers: [
        ['X-Remote-User', 'admin'],
        ['X-Remote-Group', 'system:masters'],
      ],
    });
    expect(r).toMatchObject({ status: 401, message: 'Unauthorized' });
    expect(r.ctx.req.headers).toEqual({});
  });

  it('refuses a front-proxy CA certificate whose CN is not allowed', async () => {
    const r = await run({ chain: [c('stranger')], headers: [['X-Remote-User', 'admin']] });
    expect(r.status).toBe(401);
  });

  it('maps a client-CA certificate to CN and O', async () => {
    const r = await run({ chain: [c('admin')], headers: [['X-Remote-User', 'ignored']] });
    expect(r.user).toEqual({
      name: 'annex-admin',
      groups: ['system:masters', 'team, blue', 'system:authenticated'],
      extra: {},
    });
  });

  it('asks TokenReview for bearer tokens and removes the header on success', async () => {
    const ok = await run({ headers: [['Authorization', 'Bearer good']] });
    expect(ok.user?.name).toBe('system:serviceaccount:ns:default');
    expect(ok.ctx.req.headers.authorization).toBeUndefined();
    expect((await run({ headers: [['Authorization', 'Bearer bad']] })).status).toBe(401);
    expect((await run({ headers: [['Authorization', 'Basic Zm9vOmJhcg==']] })).status).toBe(401);
    expect(tokens.seen).toEqual(['good', 'bad']);
  });

  it('lets probes through as system:anonymous', async () => {
    const r = await run({ path: '/readyz' });
    expect(r.user).toEqual({
      name: 'system:anonymous',
      groups: ['system:unauthenticated'],
      extra: {},
    });
  });

  it('stops trusting a front proxy the moment the config no longer names its CA', async () => {
    const before = config;
    config = parseAuthenticationConfig({ 'client-ca-file': pem('client-ca') });
    try {
      expect(
        (await run({ chain: [c('proxy')], headers: [['X-Remote-User', 'jane']] })).status,
      ).toBe(401);
    } finally {
      config = before;
    }
  });
});
