// Every TCP connection the listener accepts, from accept to close: whether it is busy
// (requests or streams in flight) or idle, its deadlines, the connection cap, and the
// graceful drain on shutdown.
//
// - Idle means no request in flight: a connection still in its TLS handshake, a fresh
//   one that has not sent a request, an HTTP/1.1 socket between requests, an HTTP/2
//   session with no open stream. A watch is a request in flight, never idle.
// - Deadlines: the handshake is node:tls's handshakeTimeout; HTTP/1.1 headers, body and
//   keep-alive are node:http's (set in listen.ts). This module adds what Node lacks for
//   HTTP/2: a session must open its first stream within requestTimeout (as Go's server
//   wants the preface within 10 s), is closed with GOAWAY after keepAliveTimeout with no
//   stream, and a request body that has not ended within requestTimeout is answered 408.
// - The cap: at maxConnections a newcomer first sheds the connection idle the longest.
//   If none is idle, the newcomer is still accepted, only to be told no: after the
//   handshake its first request gets a 503 Status with Retry-After and Connection: close
//   (HTTP/2: 503, then GOAWAY). A clear answer beats a TCP reset, which clients report
//   as SSL_ERROR_SYSCALL and cannot tell from a crash. Those refusals are bounded too
//   (REFUSING_MAX at once; beyond that the TCP connection is dropped at accept), so the
//   descriptors in use never exceed maxConnections + REFUSING_MAX.
// - The drain: an idle HTTP/1.1 keep-alive connection is never closed on a quiet timer,
//   since closing it races the client's next request (a POST whose bytes were written is
//   not retried: Go's http.Transport, which the API server's webhook calls use, reports
//   "EOF" or "connection reset"). Its next request is answered with Connection: close
//   instead, which the client reads before it could reuse the connection; one nobody uses
//   again is destroyed at the drain's deadline.
import type http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';
import type tls from 'node:tls';
import { StatusError } from '../core/status.js';

/** How many over-cap connections may wait at once for their 503. */
export const REFUSING_MAX = 64;

interface Conn {
  raw: net.Socket;
  tls?: tls.TLSSocket;
  session?: http2.ServerHttp2Session;
  /** Requests (HTTP/1.1) or streams (HTTP/2) in flight. */
  active: number;
  /** HTTP/1.1 answers in flight, to be told Connection: close when the drain starts. */
  answers: Set<http.ServerResponse>;
  used: boolean;
  refused: boolean;
  timer?: NodeJS.Timeout;
}

/** The connections a drain destroyed at its deadline, by what they were doing. */
export interface LeftAtDeadline {
  /** Idle after serving requests: a keep-alive socket its client stopped using. */
  idle: number;
  /** Never sent a request. */
  unused: number;
  /** A request or stream still in flight. */
  busy: number;
}

export interface TrackerOptions {
  maxConnections: number;
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
}

type Handler = (
  req: http.IncomingMessage | http2.Http2ServerRequest,
  res: http.ServerResponse | http2.Http2ServerResponse,
) => void;

const tooMany = JSON.stringify(
  new StatusError(503, 'ServiceUnavailable', 'too many open connections to annex; retry shortly')
    .status,
);
const requestTimeout = JSON.stringify(
  new StatusError(408, 'Timeout', 'the request body did not arrive in time').status,
);

/** Tells the client the connection closes after this answer, if it is not on its way yet. */
function closeAfter(res: http.ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}

export class ConnectionTracker {
  private readonly conns = new Map<net.Socket, Conn>();
  /** Idle connections, oldest idle first (re-inserted each time one becomes idle). */
  private readonly idle = new Set<Conn>();
  private refusing = 0;
  private draining = false;
  private left: LeftAtDeadline = { idle: 0, unused: 0, busy: 0 };

  constructor(private readonly o: TrackerOptions) {}

  counts(): { open: number; idle: number } {
    return { open: this.conns.size, idle: this.idle.size };
  }

  attach(server: http2.Http2SecureServer): void {
    // server.close() would also close node:http's idle HTTP/1.1 sockets at once, and to
    // node:http a socket whose next request is still on the wire is idle: that request
    // would be reset. drain() leaves them to their next answer (Connection: close) or
    // its deadline.
    (server as unknown as { closeIdleConnections: () => void }).closeIdleConnections = () => {};
    server.on('connection', (raw: net.Socket) => this.accept(raw));
    // Before http2's own listener, which creates the session (or hands the socket to
    // node:http) synchronously.
    server.prependListener('secureConnection', (t: tls.TLSSocket) => {
      const c = this.ofTls(t);
      if (!c) return;
      c.tls = t;
      // A fresh connection must send its first request within requestTimeout. (HTTP/1.1
      // also has node:http's headersTimeout, which is the same bound.)
      this.arm(c, this.o.requestTimeoutMs);
    });
    server.on('session', (s) => {
      const c = this.ofTls(s.socket as tls.TLSSocket);
      if (!c) return;
      c.session = s;
      if (this.draining) s.close();
      s.on('stream', (stream: http2.ServerHttp2Stream) => {
        this.busy(c);
        stream.once('close', () => this.done(c));
      });
    });
  }

  /** Wraps the request handler: refusals, Connection: close while draining, h2 body deadline. */
  handler(next: Handler): Handler {
    return (req, res) => {
      const h2 = 'stream' in req;
      const c = this.ofTls(req.socket as tls.TLSSocket);
      if (!h2 && c) {
        const answer = res as http.ServerResponse;
        this.busy(c);
        c.answers.add(answer);
        res.once('close', () => {
          c.answers.delete(answer);
          this.done(c);
        });
      }
      if (c?.refused) return this.refuse(req, res, c);
      if (this.draining && !h2) closeAfter(res as http.ServerResponse);
      if (h2 && !req.stream.endAfterHeaders)
        this.bodyDeadline(req, res as http2.Http2ServerResponse);
      next(req, res);
    };
  }

  /**
   * Shutdown: HTTP/2 sessions get GOAWAY (in-flight streams finish), HTTP/1.1 answers
   * carry Connection: close (node:http then closes the socket), idle HTTP/1.1 sockets
   * stay open for their next request, and whatever is still open after timeoutMs is
   * destroyed. The server's own close() stops accepting.
   */
  drain(timeoutMs: number): void {
    this.draining = true;
    for (const c of [...this.conns.values()]) {
      if (c.session) c.session.close();
      else c.answers.forEach(closeAfter);
    }
    const t = setTimeout(() => {
      for (const c of [...this.conns.values()]) {
        this.left[c.active > 0 ? 'busy' : c.used ? 'idle' : 'unused']++;
        this.destroy(c, true);
      }
    }, timeoutMs);
    t.unref();
  }

  /** What the drain's deadline destroyed (all 0 when everything closed before it). */
  leftAtDeadline(): LeftAtDeadline {
    return { ...this.left };
  }

  private ofTls(t: tls.TLSSocket | undefined): Conn | undefined {
    // node:tls keeps the accepted TCP socket as _parent; for an HTTP/2 session's socket
    // proxy the read passes through to the TLS socket.
    const raw = (t as unknown as { _parent?: net.Socket } | undefined)?._parent;
    return raw ? this.conns.get(raw) : undefined;
  }

  private accept(raw: net.Socket): void {
    let refused = false;
    if (this.conns.size >= this.o.maxConnections) {
      const oldest = this.idle.values().next().value;
      if (oldest) this.destroy(oldest);
      else if (this.refusing < REFUSING_MAX) refused = true;
      else {
        raw.destroy();
        return;
      }
    }
    const c: Conn = { raw, active: 0, answers: new Set(), used: false, refused };
    if (refused) this.refusing++;
    this.conns.set(raw, c);
    this.idle.add(c);
    raw.once('close', () => {
      clearTimeout(c.timer);
      this.conns.delete(raw);
      this.idle.delete(c);
      if (c.refused) this.refusing--;
    });
  }

  private busy(c: Conn): void {
    c.active++;
    c.used = true;
    this.idle.delete(c);
    clearTimeout(c.timer);
  }

  private done(c: Conn): void {
    if (--c.active > 0) return;
    this.idle.add(c);
    // Draining sessions have GOAWAY and close themselves once their streams end.
    if (c.session && this.draining) return;
    if (c.refused) return void c.tls?.destroySoon();
    if (c.session) return this.arm(c, this.o.keepAliveTimeoutMs);
    // HTTP/1.1: node:http's keepAliveTimeout bounds the idle socket. During the drain, an
    // answer that left before it began (without Connection: close) leaves the client free
    // to reuse the socket: its next request is answered with Connection: close, and a
    // socket that stays quiet waits for the drain's deadline.
  }

  /** Closes the connection if it is still idle after ms. */
  private arm(c: Conn, ms: number): void {
    clearTimeout(c.timer);
    c.timer = setTimeout(() => {
      if (c.active === 0) this.destroy(c, false, true);
    }, ms);
    c.timer.unref();
  }

  /** Closes an idle connection (or, forced, any); `flush` lets written bytes go out first. */
  private destroy(c: Conn, force = false, flush = false): void {
    this.idle.delete(c);
    if (c.session && !c.session.destroyed) {
      // GOAWAY first, so the client knows not to retry on this session.
      c.session.close();
      if (c.active === 0 || force) c.session.destroy();
      return;
    }
    if (flush && c.tls) c.tls.destroySoon();
    else (c.tls ?? c.raw).destroy();
  }

  private refuse(
    req: http.IncomingMessage | http2.Http2ServerRequest,
    res: http.ServerResponse | http2.Http2ServerResponse,
    c: Conn,
  ): void {
    const headers: Record<string, string | number> = {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(tooMany),
      'retry-after': 1,
    };
    if (!('stream' in req)) headers.connection = 'close';
    res.writeHead(503, headers);
    res.end(tooMany);
    if ('stream' in req) {
      // GOAWAY at once, not on the answer's 'finish': as with the 408 below, the compat
      // layer emits that only when the stream closes, which a client that grants no
      // window for the body (or holds its side open) never lets happen, and the refused
      // connection would stay. RST_STREAM(NO_ERROR) follows the answer once it is sent
      // (RFC 9113 §8.1: a complete response may end the client's request); a client that
      // will not take it gets requestTimeout, as a body that never comes does.
      c.session?.close();
      req.stream.close(http2.constants.NGHTTP2_NO_ERROR);
      const t = setTimeout(() => c.session?.destroy(), this.o.requestTimeoutMs);
      t.unref();
      req.stream.once('close', () => clearTimeout(t));
    }
  }

  /** An HTTP/2 request body that has not ended within requestTimeout: 408, stream reset. */
  private bodyDeadline(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse): void {
    const t = setTimeout(() => {
      const reset = () => req.stream.close(http2.constants.NGHTTP2_CANCEL);
      if (res.headersSent || res.writableEnded) return reset();
      res.writeHead(408, { 'content-type': 'application/json' });
      res.end(requestTimeout);
      // At once, not on the answer's 'finish': the compat layer emits that only when the
      // stream closes, which a client still holding its side open never lets happen (the
      // stream, and the handler waiting on its body, would stay forever). close() sends
      // RST_STREAM after the queued answer. The body reader (review-io.ts) learns of it
      // as of any abort: the compat request emits 'close' before 'end' here, and a reader
      // that stops listening on 'close' would wait forever.
      req.emit('aborted');
      reset();
    }, this.o.requestTimeoutMs);
    t.unref();
    const clear = () => clearTimeout(t);
    req.once('end', clear);
    res.once('close', clear);
  }
}
