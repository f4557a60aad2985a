// One debug line per request. Paths and codes only: never bodies, headers or query
// strings (a query could carry a selector with user data; a header a token), each
// field bounded. Below debug level, nothing of the line is built.
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

function logRequest(log: Logger, ctx: Koa.Context, start: bigint): void {
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  log.debug(
    {
      method: logField(ctx.method),
      path: logField(ctx.path),
      code: ctx.status,
      ms: Math.round(ms * 10) / 10,
      proto: ctx.req.httpVersion,
    },
    'request',
  );
}
