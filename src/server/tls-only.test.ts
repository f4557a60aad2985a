// Security: annex's port speaks TLS 1.2+ only. A plain-HTTP request (HTTP/1.1 or the
// HTTP/2 cleartext preface) gets no HTTP answer, TLS 1.0 and 1.1 are refused although
// this client can speak them (a permissive server beside proves it), and src/ holds no
// other listening server than listen.ts's http2.createSecureServer.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import tls from 'node:tls';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCertificates } from '../certs/index.js';
import { listen, type Listening } from './listen.js';

let dir: string;
let material: { cert: string; key: string };
let annex: Listening;
let permissive: tls.Server;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'annex-tls-only-'));
  const c = await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  material = { cert: c.certPem, key: c.keyPem };
  const app = new Koa();
  app.use((ctx) => (ctx.body = 'ok'));
  annex = await listen(app, {
    host: '127.0.0.1',
    port: 0,
    keepAliveTimeoutSeconds: 5,
    tls: material,
  });
  // The control: what this client negotiates with a server that still allows old versions.
  permissive = tls.createServer({
    ...material,
    minVersion: 'TLSv1',
    ciphers: 'DEFAULT@SECLEVEL=0',
  });
  await new Promise<void>((r) => permissive.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  await annex.close();
  await new Promise((r) => permissive.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** The bytes a server sends back to `request` written in clear, until it closes (or 5 s). */
function plainExchange(port: number, request: string): Promise<{ bytes: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const s = net.connect(port, '127.0.0.1', () => s.write(request));
    const done = (closed: boolean) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ bytes: Buffer.concat(chunks), closed });
    };
    const timer = setTimeout(() => done(false), 5000);
    s.on('data', (d) => chunks.push(d));
    s.on('close', () => done(true));
    s.on('error', () => {});
  });
}

/** The protocol negotiated, or 'refused'. */
function handshake(port: number, version: tls.SecureVersion): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({
      host: '127.0.0.1',
      port,
      rejectUnauthorized: false,
      minVersion: version,
      maxVersion: version,
      ciphers: 'DEFAULT@SECLEVEL=0',
    });
    s.once('secureConnect', () => {
      resolve(s.getProtocol() ?? 'none');
      s.destroy();
    });
    s.once('error', () => resolve('refused'));
  });
}

describe('TLS only', () => {
  it('answers no plain-HTTP request with HTTP: it closes the connection', async () => {
    for (const request of [
      'GET /livez HTTP/1.1\r\nHost: annex\r\n\r\n',
      'POST /validate/names.annex.dev HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}',
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    ]) {
      const { bytes, closed } = await plainExchange(annex.port, request);
      expect(closed).toBe(true);
      expect(bytes.toString('latin1')).not.toMatch(/HTTP\/|ok/);
    }
  });

  it('refuses TLS 1.0 and 1.1, which this client speaks, and serves TLS 1.2 and 1.3', async () => {
    const permissivePort = (permissive.address() as net.AddressInfo).port;
    expect(await handshake(permissivePort, 'TLSv1')).toBe('TLSv1');
    expect(await handshake(permissivePort, 'TLSv1.1')).toBe('TLSv1.1');
    expect(await handshake(annex.port, 'TLSv1')).toBe('refused');
    expect(await handshake(annex.port, 'TLSv1.1')).toBe('refused');
    expect(await handshake(annex.port, 'TLSv1.2')).toBe('TLSv1.2');
    expect(await handshake(annex.port, 'TLSv1.3')).toBe('TLSv1.3');
  });

  it('has one listening server in src/, a TLS one', () => {
    const src = join(import.meta.dirname, '..');
    const files = (readdirSync(src, { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => join(src, f));
    const servers = files.flatMap((f) =>
      [
        ...readFileSync(f, 'utf8').matchAll(
          /\b(\w+)\.(createServer|createSecureServer)\(|\bcreateServer\(/g,
        ),
      ].map((m) => `${relative(src, f)}: ${m[0]}`),
    );
    // devcluster's createServer (node:net) only asks the kernel for a free port, then closes.
    expect(servers.sort()).toEqual([
      'devcluster/control-plane.ts: createServer(',
      'server/listen.ts: http2.createSecureServer(',
    ]);
    const listenPoints = files.filter((f) => /\.listen\(/.test(readFileSync(f, 'utf8')));
    expect(listenPoints.map((f) => relative(src, f)).sort()).toEqual([
      'devcluster/control-plane.ts',
      'server/listen.ts',
    ]);
  });
});
