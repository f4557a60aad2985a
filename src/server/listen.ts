// One TLS port for everything, HTTP/2 and HTTP/1.1 (the aggregator proxies over h2;
// webhook calls arrive over HTTP/1.1). Client certificates are requested but not
// required: the aggregator presents its front-proxy certificate, webhook calls bring
// none, and authentication decides what a certificate is worth.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** CAs whose names are offered in the CertificateRequest (front-proxy CA, client CA). */
  clientCAs?: string[];
}

export interface Listening {
  server: http2.Http2SecureServer;
  port: number;
  url: string;
  /** Swap certificate or client CAs without dropping a connection. */
  updateTls(material: TlsMaterial): void;
  close(): Promise<void>;
}

function secureOptions(m: TlsMaterial) {
  return {
    cert: m.cert,
    key: m.key,
    ...(m.clientCAs?.length ? { ca: m.clientCAs } : {}),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: 'TLSv1.2' as const,
  };
}

export async function listen(
  app: Koa,
  opts: { host: string; port: number; keepAliveTimeoutSeconds: number; tls: TlsMaterial },
): Promise<Listening> {
  const server = http2.createSecureServer(
    { ...secureOptions(opts.tls), allowHTTP1: true, settings: { maxConcurrentStreams: 250 } },
    app.callback(),
  );
  // HTTP/1.1 connections go through node:http's connection handling, which reads these
  // from the server object: keep idle sockets longer than the API server's 90 s pool.
  const h1 = server as unknown as { keepAliveTimeout: number; headersTimeout: number };
  h1.keepAliveTimeout = opts.keepAliveTimeoutSeconds * 1000;
  h1.headersTimeout = opts.keepAliveTimeoutSeconds * 1000 + 1000;
  // HTTP/2 sessions: no idle timeout of our own; the client closes them.
  server.setTimeout(0);

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  const sockets = new Set<import('node:net').Socket>();
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  return {
    server,
    port,
    url: `https://${host}:${port}`,
    updateTls: (m) => server.setSecureContext(secureOptions(m)),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sessions) s.close();
        for (const s of sockets) s.destroy();
      }),
  };
}
