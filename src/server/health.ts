// /livez, /readyz and /healthz answer like kube-apiserver's: "ok" as text, no auth,
// so kubelet probes and the aggregator's checks never depend on the API server being up.
// While annex shuts down /readyz answers 503 (endpoints drop the Pod) and /livez stays
// 200 (kubelet must not restart a Pod that is draining).
import type Koa from 'koa';

export const HEALTH_PATHS = new Set(['/livez', '/readyz', '/healthz']);

export function health(isReady: () => boolean): Koa.Middleware {
  return async (ctx, next) => {
    if (!HEALTH_PATHS.has(ctx.path) || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) {
      return next();
    }
    const ok = ctx.path !== '/readyz' || isReady();
    ctx.status = ok ? 200 : 503;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.body = ok ? 'ok' : 'readyz check failed';
  };
}
