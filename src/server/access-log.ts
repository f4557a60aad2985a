// One debug line per request. Paths and codes only: never bodies, headers or query
// strings (a query could carry a selector with user data; a header a token), each
// field bounded. The code is the one sent: this runs outside statusErrors (a thrown
// Status has become its code by then), takes the written head's code when something
// else already answered (the HTTP/2 body deadline's 408, a stream), and is 0 when the
// client left before any answer. Below debug level, nothing of the line is built.
import type Koa from 'koa';
import { logField, type Logger } from '../log.js';

export function accessLog(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    const start = process.hrtime.bigint();
    try {
      await next();
    } finally {
      if (log.isLevelEnabled('debug')) logRequest(log, ctx, start);
    }
  };
}

/** What goes (or went) on the wire: the head written, else Koa's status, else nothing (0). */
function codeSent(ctx: Koa.Context): number {
  const res = ctx.res as Koa.Context['res'] & { stream?: { destroyed: boolean } };
  if (res.headersSent) return res.statusCode;
  // HTTP/2: a reset stream leaves the response "writable"; the request knows it was aborted.
  const gone = (ctx.req as { aborted?: boolean }).aborted === true || res.stream?.destroyed;
  return gone || !ctx.writable ? 0 : ctx.status;
}

function logRequest(log: Logger, ctx: Koa.Context, start: bigint): void {
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  log.debug(
    {
      method: logField(ctx.method),
      path: logField(ctx.path),
      code: codeSent(ctx),
      ms: Math.round(ms * 10) / 10,
      proto: ctx.req.httpVersion,
    },
    'request',
  );
}
