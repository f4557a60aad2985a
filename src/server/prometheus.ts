// GET /metrics: annex's own Prometheus metrics (prom-client's default registry: scrape
// failures per node, scrape and review latencies). Mounted behind authentication and
// authorization, like kube-apiserver's /metrics (a non-resource URL: `get /metrics`).
import type Koa from 'koa';
import { collectDefaultMetrics, register } from 'prom-client';
import { classifiedOf } from './request-kind.js';

let defaultsCollected = false;

export function prometheusEndpoint(): Koa.Middleware {
  if (!defaultsCollected) {
    collectDefaultMetrics({ prefix: 'annex_' });
    defaultsCollected = true;
  }
  return async (ctx, next) => {
    const { kind } = classifiedOf(ctx);
    const metrics = kind ? kind === 'metrics' : ctx.path === '/metrics' && ctx.method === 'GET';
    if (!metrics) return next();
    ctx.type = register.contentType;
    ctx.body = await register.metrics();
  };
}
