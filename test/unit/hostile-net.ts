// Real clients for hostile-input tests: a TLS listener running annex's request path on
// 127.0.0.1 (with a slow stream and a body reader after it), raw TLS sockets, HTTP/1.1
// responses read by hand, and HTTP/2 sessions. `useHostileServer()` registers the
// certificates and the clean-up with the calling test file.
import { mkdtempSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import type net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { ensureCertificates } from '../../src/certs/index.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/log.js';
import type { AppParts } from '../../src/server/app.js';
import { builtinFeatures } from '../../src/server/builtins.js';
import { listen, type Listening } from '../../src/server/listen.js';
import { appOf } from './app-of.js';

let dir: string;
export let ca: string;
export let material: { cert: string; key: string };
const log = createLogger('silent');
export const opened: { destroy(): void }[] = [];

/** Serving certificates for the file's servers; every socket opened is destroyed after each test. */
export function useHostileServer(): void {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'annex-hostile-'));
    const c = await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
    ca = c.caPem;
    material = { cert: c.certPem, key: c.keyPem };
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  afterEach(() => {
    for (const s of opened.splice(0)) s.destroy();
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;

/**
 * The bound on a client's median latency during an attack: `floorMs` on a quiet machine, or
 * 20 times the median measured before the attack in the same run, if the machine is that busy.
 */
export const servedAsUsual = (quiet: number[], floorMs = 100) =>
  Math.max(floorMs, 20 * median(quiet));

/** Test routes: a slow stream (a stand-in for a watch), a slow answer and a body reader. */
export function testRoutes(): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path === '/stream') {
      const ms = Number(ctx.query.ms ?? 1000);
      const { PassThrough } = await import('node:stream');
      const out = new PassThrough();
      let n = 0;
      const t = setInterval(() => {
        out.write(`tick ${n++}\n`);
        if (n * 200 >= ms) {
          clearInterval(t);
          out.end('done\n');
        }
      }, 200);
      ctx.req.once('close', () => clearInterval(t));
      ctx.body = out;
      return;
    }
    if (ctx.path.startsWith('/slow')) {
      // A short request that takes its time (the handler itself waits).
      await sleep(Number(ctx.query.ms ?? 1000));
      ctx.body = { slow: true };
      return;
    }
    if (ctx.path === '/echo' && ctx.method === 'POST') {
      const raw = await getRawBody(ctx.req, { limit: 1024 * 1024 });
      ctx.body = { bytes: raw.length };
      return;
    }
    return next();
  };
}

/** annex's request path (built-in webhooks, no auth, loopback) plus testRoutes, listening. */
export async function start(
  opts: Record<string, unknown> = {},
  parts: Partial<AppParts> = {},
): Promise<Listening> {
  const config = loadConfig();
  const app = appOf({
    log,
    webhooks: builtinFeatures(config).flatMap((f) => f.webhooks ?? []),
    maxReviewBytesInFlight: config.admission.maxInFlightBytes,
    ...parts,
  });
  app.use(testRoutes()); // after the whole path, as a feature's routes would be
  const l = await listen(app, {
    host: '127.0.0.1',
    port: 0,
    keepAliveTimeoutSeconds: 100,
    tls: material,
    ...opts,
  } as Parameters<typeof listen>[1]);
  opened.push({ destroy: () => void l.close() });
  return l;
}

export function tlsConnect(l: Listening, alpn: string[], extra: tls.ConnectionOptions = {}) {
  return new Promise<tls.TLSSocket>((resolve, reject) => {
    const s = tls.connect(
      {
        host: '127.0.0.1',
        port: l.port,
        ca,
        servername: 'localhost',
        ALPNProtocols: alpn,
        ...extra,
      },
      () => resolve(s),
    );
    s.once('error', reject);
    opened.push(s);
  });
}

/** Resolves when the socket closes, or with false after `ms`. (Reads: a paused socket never sees the FIN.) */
export const closedWithin = (s: net.Socket | http2.Http2Session, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (s.destroyed) return resolve(true);
    if ('resume' in s) s.resume();
    const t = setTimeout(() => resolve(false), ms);
    s.once('close', () => {
      clearTimeout(t);
      resolve(true);
    });
  });

/** Reads one HTTP/1.1 response head (and a content-length body) from a raw socket. */
export function readResponse(s: tls.TLSSocket, ms = 5000) {
  return new Promise<{ status: number; headers: Record<string, string>; body: string }>(
    (resolve, reject) => {
      let buf = '';
      const t = setTimeout(() => done(new Error(`no response within ${ms} ms`)), ms);
      const onData = (d: Buffer) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [statusLine, ...lines] = buf.slice(0, end).split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines) {
          const i = l.indexOf(':');
          headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
        }
        const body = buf.slice(end + 4);
        const len = Number(headers['content-length'] ?? 0);
        if (body.length < len) return;
        done(null, { status: Number(statusLine!.split(' ')[1]), headers, body });
      };
      const onClose = () => done(new Error(`closed before a response (got ${buf.length} bytes)`));
      const done = (err: Error | null, v?: Parameters<typeof resolve>[0]) => {
        clearTimeout(t);
        s.off('data', onData);
        s.off('close', onClose);
        if (err) reject(err);
        else resolve(v!);
      };
      s.on('data', onData);
      s.once('close', onClose);
    },
  );
}

export function h2Connect(l: Listening, settings: http2.Settings = {}) {
  return new Promise<http2.ClientHttp2Session>((resolve, reject) => {
    const s = http2.connect(l.url, { ca, servername: 'localhost', settings });
    s.once('connect', () => resolve(s));
    s.once('error', reject);
    opened.push(s);
  });
}

export function h2Request(
  s: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: string,
  ms = 5000,
) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = s.request(headers, { endStream: body === undefined });
    let status = 0;
    let out = '';
    const t = setTimeout(() => reject(new Error(`no h2 response within ${ms} ms`)), ms);
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (d) => (out += d));
    req.on('end', () => {
      clearTimeout(t);
      resolve({ status, body: out });
    });
    req.on('error', (e) => {
      clearTimeout(t);
      reject(e);
    });
    if (body !== undefined) req.end(body);
  });
}

export const reviewBody = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'c0ffee',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    namespace: 'ns',
    operation: 'CREATE',
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fine' } },
  },
});

export const connectionCount = (l: Listening) =>
  new Promise<number>((resolve) => l.server.getConnections((_e, n) => resolve(n)));
