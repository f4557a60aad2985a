// One TLS port for everything, HTTP/2 and HTTP/1.1 (the aggregator proxies over h2;
// webhook calls arrive over HTTP/1.1). Client certificates are requested but not
// required: the aggregator presents its front-proxy certificate, webhook calls bring
// none, and authentication decides what a certificate is worth.
//
// Every connection state has a bound, so hostile or broken clients cannot hold file
// descriptors forever (see ./connections.ts): the TLS handshake, the first request on
// a new connection, request headers and body, and idleness between requests. A long
// response (a watch) is never cut: only its own timeout ends it.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import { ConnectionTracker, type LeftAtDeadline } from './connections.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** CAs whose names are offered in the CertificateRequest (front-proxy CA, client CA). */
  clientCAs?: string[];
}

export interface ListenOptions {
  host: string;
  port: number;
  tls: TlsMaterial;
  /** Idle time before an HTTP/1.1 keep-alive connection or an HTTP/2 session is closed. */
  keepAliveTimeoutSeconds: number;
  /** Headers and body must arrive within this; so must the first request on a new connection. */
  requestTimeoutSeconds?: number;
  /** A TLS handshake must complete within this. */
  handshakeTimeoutSeconds?: number;
  /** Open connections at most; beyond it the oldest idle one is shed, or the newcomer refused. */
  maxConnections?: number;
  /** close(): how long in-flight requests may take before their connections are destroyed. */
  shutdownTimeoutSeconds?: number;
}

export interface Listening {
  server: http2.Http2SecureServer;
  port: number;
  url: string;
  /** Swap certificate or client CAs without dropping a connection. */
  updateTls(material: TlsMaterial): void;
  /** Open connections, and how many of them are idle (figures for tests and logs). */
  connections(): { open: number; idle: number };
  /**
   * Stops accepting, sends GOAWAY on HTTP/2 sessions and `Connection: close` on HTTP/1.1
   * answers (idle HTTP/1.1 connections on their next one), waits up to
   * shutdownTimeoutSeconds, then destroys what is left: how many, once all are closed.
   */
  close(): Promise<LeftAtDeadline>;
}

/**
 * Go crypto/tls's default TLS 1.2 suites (what kube-apiserver itself accepts): ECDHE
 * with AES-GCM or ChaCha20-Poly1305, then ECDHE with AES-CBC-SHA1, which Go still
 * enables by default. No RSA key exchange (not forward secret), no CBC-SHA256, no 3DES.
 * Only TLS 1.2 names: OpenSSL keeps its TLS 1.3 suites, which Go's equal.
 */
export const TLS12_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
].join(':');

function secureOptions(m: TlsMaterial) {
  return {
    cert: m.cert,
    key: m.key,
    ...(m.clientCAs?.length ? { ca: m.clientCAs } : {}),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2' as const,
    ciphers: TLS12_CIPHERS,
  };
}

export async function listen(app: Koa, opts: ListenOptions): Promise<Listening> {
  const requestMs = (opts.requestTimeoutSeconds ?? 30) * 1000;
  const keepAliveMs = opts.keepAliveTimeoutSeconds * 1000;
  const tracker = new ConnectionTracker({
    maxConnections: opts.maxConnections ?? 8192,
    requestTimeoutMs: requestMs,
    keepAliveTimeoutMs: keepAliveMs,
  });
  const server = http2.createSecureServer(
    {
      ...secureOptions(opts.tls),
      allowHTTP1: true,
      settings: { maxConcurrentStreams: 250 },
      handshakeTimeout: (opts.handshakeTimeoutSeconds ?? 10) * 1000,
    },
    tracker.handler(app.callback()),
  );
  // HTTP/1.1 connections go through node:http's connection handling, which reads these
  // from the server object: idle sockets live longer than the API server's 90 s pool;
  // headers and body (and the first request of a fresh connection) get requestTimeout,
  // checked every second rather than every 30.
  const h1 = server as unknown as {
    keepAliveTimeout: number;
    headersTimeout: number;
    requestTimeout: number;
    connectionsCheckingInterval: number;
  };
  h1.keepAliveTimeout = keepAliveMs;
  h1.requestTimeout = requestMs;
  h1.headersTimeout = requestMs;
  h1.connectionsCheckingInterval = Math.min(1000, requestMs);
  // No socket inactivity timeout: idleness is judged per request/stream by the tracker,
  // so an open watch is never "idle".
  server.setTimeout(0);
  tracker.attach(server);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  let closing: Promise<LeftAtDeadline> | undefined;
  return {
    server,
    port,
    url: `https://${host}:${port}`,
    updateTls: (m) => server.setSecureContext(secureOptions(m)),
    connections: () => tracker.counts(),
    close: () =>
      (closing ??= new Promise<LeftAtDeadline>((resolve) => {
        server.close(() => resolve(tracker.leftAtDeadline()));
        tracker.drain((opts.shutdownTimeoutSeconds ?? 30) * 1000);
      })),
  };
}
