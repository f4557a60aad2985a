// One TLS port for everything, HTTP/2 and HTTP/1.1, each served by the stack built for
// it: the API server calls webhooks (admission, conversion) over HTTP/1.1 and the
// aggregator proxies over h2 (test/e2e/protocols.test.ts pins both). A plain tls.Server
// accepts and negotiates ALPN; the TLS socket then goes to a node:http server if the
// client chose `http/1.1` (or offered no ALPN) and to a node:http2 server if it chose
// `h2`. (http2's own `allowHTTP1` also ends in node:http, but every HTTP/1.1 socket
// passes through the http2 server's connection handling first; see
// docs/architecture.md for the measured difference.) Neither inner server listens:
// they only ever see sockets handed to them here.
//
// Client certificates are requested but not required: the aggregator presents its
// front-proxy certificate, webhook calls bring none, and authentication decides what a
// certificate is worth.
//
// Every connection state has a bound, so hostile or broken clients cannot hold file
// descriptors forever (see ./connections.ts): the TLS handshake, the first request on
// a new connection, request headers and body, and idleness between requests. A long
// response (a watch) is never cut: only its own timeout ends it.
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import type Koa from 'koa';
import { ConnectionTracker } from './connections.js';

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
  /** The TLS listener (accepts, negotiates; its sockets go to the two servers below). */
  server: tls.Server;
  /** Serves the connections that negotiated `http/1.1` or no ALPN. */
  h1: http.Server;
  /** Serves the connections that negotiated `h2`. */
  h2: http2.Http2Server;
  port: number;
  url: string;
  /** Swap certificate or client CAs without dropping a connection. */
  updateTls(material: TlsMaterial): void;
  /** Open connections, and how many of them are idle (figures for tests and logs). */
  connections(): { open: number; idle: number };
  /**
   * Stops accepting, sends GOAWAY on HTTP/2 sessions and `Connection: close` on HTTP/1.1
   * answers, closes idle connections, waits for in-flight requests up to
   * shutdownTimeoutSeconds, then destroys what is left.
   */
  close(): Promise<void>;
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
  const handler = tracker.handler(app.callback());
  const server = tls.createServer({
    ...secureOptions(opts.tls),
    ALPNProtocols: ['h2', 'http/1.1'],
    handshakeTimeout: (opts.handshakeTimeoutSeconds ?? 10) * 1000,
  });
  const h2 = http2.createServer({ settings: { maxConcurrentStreams: 250 } }, handler);
  // keepAliveTimeout: idle sockets live longer than the API server's 90 s pool. Headers
  // and body (and the first request of a fresh connection) get requestTimeout, checked
  // every second rather than every 30 (node:http starts that check on 'listening').
  const h1 = http.createServer(
    {
      keepAliveTimeout: keepAliveMs,
      requestTimeout: requestMs,
      headersTimeout: requestMs,
      connectionsCheckingInterval: Math.min(1000, requestMs),
    },
    handler,
  );
  // No socket inactivity timeout: idleness is judged per request/stream by the tracker,
  // so an open watch is never "idle".
  h2.setTimeout(0);
  h1.setTimeout(0);
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    if (socket.alpnProtocol === 'h2') h2.emit('connection', socket);
    else h1.emit('connection', socket);
  });
  // A handshake that failed or timed out: close the socket, as http2's secure server
  // does (node:tls leaves that to a 'tlsClientError' listener once there is one).
  server.on('tlsClientError', (_e, socket) => socket.destroy());
  server.once('listening', () => h1.emit('listening'));
  tracker.attach(server, h1, h2);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  let closing: Promise<void> | undefined;
  return {
    server,
    h1,
    h2,
    port,
    url: `https://${host}:${port}`,
    updateTls: (m) => server.setSecureContext(secureOptions(m)),
    connections: () => tracker.counts(),
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Stops node:http's request-timeout check; h1 never listened, so its error is moot.
        h1.close(() => {});
        tracker.drain((opts.shutdownTimeoutSeconds ?? 30) * 1000);
      })),
  };
}
