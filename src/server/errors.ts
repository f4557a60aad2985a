// Whatever goes wrong below becomes a Kubernetes Status (only the access log is outside).
// Known failures (StatusError) keep their code; anything else is a 500 whose details
// go to the log (class and stack frames, never the message), never to the client.
import type Koa from 'koa';
import { internalError, notFoundPath, StatusError, type Status } from '../core/status.js';
import { errorFields, logField, type Logger } from '../log.js';

export function sendStatus(ctx: Koa.Context, status: Status): void {
  ctx.status = status.code;
  // Exactly application/json, as kube-apiserver sends Status (ctx.type would add a charset).
  ctx.set('Content-Type', 'application/json');
  ctx.body = status;
}

export function statusErrors(log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined && ctx.status === 404) sendStatus(ctx, notFoundPath().status);
    } catch (err) {
      if (err instanceof StatusError) {
        sendStatus(ctx, err.status);
        return;
      }
      // Koa's body parser and http-errors carry an HTTP status for client mistakes.
      const e = err as { status?: number; expose?: boolean; message?: string; type?: string };
      if (e.status && e.status >= 400 && e.status < 500 && e.expose) {
        const reason = e.status === 413 ? 'RequestEntityTooLarge' : 'BadRequest';
        sendStatus(ctx, new StatusError(e.status, reason, e.message ?? 'bad request').status);
        return;
      }
      // The class and stack frames only: a message can quote the request's values.
      log.error(
        { ...errorFields(err), method: logField(ctx.method), path: logField(ctx.path) },
        'request failed',
      );
      sendStatus(ctx, internalError('an unexpected error occurred; see the annex log').status);
    }
  };
}
