// The aggregated API as one middleware, in k8s.io/apiserver's filter order:
// request info (parsed once) → authentication → authorization → /metrics or the
// generic handler.
import compose from 'koa-compose';
import type Koa from 'koa';
import type { DelegatedAuth } from './auth/index.js';
import { prometheusEndpoint } from '../server/prometheus.js';
import { aggregatedApi, type AggregatedApiOptions } from './handler.js';
import { requestInfoMiddleware } from './request-info.js';
import type { GroupVersionDecl } from './types.js';

/** `auth: null` only in standalone mode (no API server, loopback listener): see start.ts. */
export function aggregatedApiFeature(
  groups: GroupVersionDecl[],
  auth: DelegatedAuth | null,
  opts: AggregatedApiOptions = {},
): Koa.Middleware {
  const chain: Koa.Middleware[] = [requestInfoMiddleware()];
  if (auth) chain.push(auth.authenticate, auth.authorize);
  chain.push(prometheusEndpoint(), aggregatedApi(groups, opts));
  return compose(chain);
}
