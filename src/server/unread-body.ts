// A request answered before its body was read (413 from the body limit, 404, 415…)
// leaves the rest of the body on an HTTP/1.1 connection: kept alive, the next request
// on it would be parsed from the middle of that body and hang. So, before the answer
// goes out, read and discard what is left, up to DRAIN_MAX_BYTES and DRAIN_MAX_MS (as
// Go's server discards up to 256 KiB); a body that ends within both keeps the
// connection, any other gets `Connection: close`. Discarding first also means the
// close is a FIN, not a reset that could destroy the answer before the client reads it.
// HTTP/2 needs none of this: each request is its own stream.
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';

export const DRAIN_MAX_BYTES = 1024 * 1024;
export const DRAIN_MAX_MS = 1000;

export function unreadBody(): Koa.Middleware {
  return async (ctx, next) => {
    await next();
    const req = ctx.req as IncomingMessage;
    if (req.httpVersionMajor !== 1 || req.complete || ctx.res.headersSent) return;
    if (!(await discard(req))) ctx.set('Connection', 'close');
  };
}

/** Reads the rest of the body away; true if it ended within the bounds. */
function discard(req: IncomingMessage): Promise<boolean> {
  return new Promise((resolve) => {
    let bytes = 0;
    const finish = (ended: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('close', onClose);
      if (!ended) req.pause();
      resolve(ended);
    };
    const onData = (d: Buffer) => {
      bytes += d.length;
      if (bytes > DRAIN_MAX_BYTES) finish(false);
    };
    const onEnd = () => finish(true);
    const onClose = () => finish(req.complete);
    const timer = setTimeout(() => finish(false), DRAIN_MAX_MS);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('close', onClose);
    req.resume();
  });
}
