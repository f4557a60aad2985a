// The one place the request path is composed. Read it top to bottom: each middleware
// does one thing, in the order k8s.io/apiserver's filter chain does it. Nothing below is
// specific to a feature: webhooks and groups come from the features' declarations.
import type { X509Certificate } from 'node:crypto';
import Router from '@koa/router';
import Koa from 'koa';
import { admissionReview } from '../admission/server.js';
import { webhookPath, type Webhook } from '../admission/webhook.js';
import type { DelegatedAuth } from '../apiserver/auth/index.js';
import { aggregatedApi, requestInfoMiddleware } from '../apiserver/handler.js';
import { forbiddenPath, methodNotAllowedPath, unauthorized } from '../core/status.js';
import type { GroupVersionDecl } from '../core/types.js';
import { conversionPath, type Conversion } from '../conversion/declare.js';
import { conversionReview } from '../conversion/server.js';
import type { Logger } from '../log.js';
import type { Feature } from '../core/feature.js';
import { accessLog } from './access-log.js';
import { peerEndpoints } from './client-cert.js';
import { statusErrors } from './errors.js';
import { health, type Readiness } from './health.js';
import { prometheusEndpoint } from './prometheus.js';
import { fairShare, overload, type InFlightLimits } from './overload.js';
import { inFlightBytes } from '../core/review-io.js';
import type { ReviewCaller, ReviewCallers } from './review-callers.js';
import { unreadBody } from './unread-body.js';

export interface AppParts {
  log: Logger;
  readiness: Readiness;
  webhooks: Webhook[];
  /** CRD conversions (ConversionReviews), served beside the webhooks. */
  conversions?: Conversion[];
  groups: GroupVersionDecl[];
  /** Features whose `peer` endpoints are served to annex's own replicas. */
  features?: readonly Feature[];
  /** annex's CA (ca.crt), read per request: it is what a replica's certificate chains to. */
  annexCa?: () => X509Certificate[];
  /** Who sent each AdmissionReview: a client certificate from `admission.clientCA`, or not. */
  reviewCallers?: ReviewCallers;
  /** `admission.requireClientCert`: a review from any other caller is refused (401). */
  requireClientCert?: boolean;
  /**
   * Delegated authentication and authorization; null only without an API server, when
   * annex listens on loopback (`trustLoopback`) or serves nothing but webhooks and probes.
   */
  auth: DelegatedAuth | null;
  trustLoopback: boolean;
  /** Aborted when the drain starts: open watches then end cleanly instead of being reset. */
  stopWatches: AbortSignal;
  /** Review bytes held at once, across every webhook and conversion; beyond it a 429. */
  maxReviewBytesInFlight: number;
  /** Requests in flight per priority class (server.maxInFlight); beyond it a fast 429. */
  maxInFlight?: InFlightLimits;
}

export function createApp(parts: AppParts): Koa {
  const app = new Koa();
  // Koa's default 'error' listener prints stacks to stderr; statusErrors already logs.
  app.silent = true;
  app.use(unreadBody()); // 0. an answer sent before its body was read: discard the rest, or close
  app.use(accessLog(parts.log)); // 1. one line per request: method, path, the code sent, latency
  app.use(statusErrors(parts.log)); // 2. every failure below → a Status JSON
  app.use(health(parts.readiness)); // 3. probes, before any authentication
  if (parts.maxInFlight) app.use(overload(parts.maxInFlight).middleware); // 3b. in-flight bound per priority class, else 429
  app.use(
    reviewRoutes(parts, parts.log, {
      maxBytesInFlight: parts.maxReviewBytesInFlight,
      ...(parts.reviewCallers ? { callers: parts.reviewCallers } : {}),
      requireClientCert: parts.requireClientCert ?? false,
    }),
  ); // 4. Admission- and ConversionReviews from the API server (its caller told, or 401 if required)
  if (parts.annexCa && parts.features?.some((f) => f.peer)) {
    app.use(peerEndpoints(parts.features, parts.annexCa, parts.log)); // 4b. other replicas of annex, by annex's CA
  }
  app.use(requestInfoMiddleware()); // 5. verb, group, resource, namespace, name: parsed once
  if (parts.auth) {
    app.use(parts.auth.authenticate); // 6. who: front-proxy cert + X-Remote-*, client cert, token
    if (parts.maxInFlight) app.use(fairShare(parts.maxInFlight)); // 6b. each caller its share of its class, else 429
    app.use(parts.auth.authorize); // 7. may they: SubjectAccessReview, cached
  } else if (!parts.trustLoopback) {
    app.use(refuseWithoutApiServer); // 6–7. nobody to ask: refuse all but the above
  }
  app.use(prometheusEndpoint()); // 8. GET /metrics
  if (parts.groups.length) app.use(aggregatedApi(parts.groups, { stop: parts.stopWatches })); // 9. discovery, OpenAPI, get/list/watch
  return app;
}

const NO_CALLERS: ReviewCallers['of'] = () => ({
  authenticated: false,
  reason: 'admission.clientCA is not set',
});

/**
 * POST /validate/<name>, /mutate/<name> (one route per declared webhook) and
 * /convert/<name> (one per declared conversion), sharing one bound on review bytes. Only
 * AdmissionReviews are asked for the API server's certificate: the API server calls
 * conversion webhooks without one (apiextensions-apiserver gives them no kubeconfig).
 */
export function reviewRoutes(
  declared: { webhooks: Webhook[]; conversions?: Conversion[] },
  log: Logger,
  opts: { maxBytesInFlight?: number; callers?: ReviewCallers; requireClientCert?: boolean } = {},
): Koa.Middleware {
  const router = new Router();
  const inFlight = inFlightBytes(opts.maxBytesInFlight ?? Infinity);
  const callers = opts.callers;
  const callerOf: ReviewCallers['of'] = callers ? (ctx, w) => callers.of(ctx, w) : NO_CALLERS;
  const refuse = (ctx: Koa.Context, caller: ReviewCaller) => {
    if (caller.authenticated || !opts.requireClientCert) return;
    log.warn(
      { path: ctx.path, reason: caller.reason },
      'admission review: client certificate refused',
    );
    throw unauthorized();
  };
  // The API server calls the exact paths: those are one map lookup. Anything else (another
  // case, a trailing slash) goes through the router, which matches as before.
  const exact = new Map<string, Koa.Middleware>();
  const post = (path: string, review: (ctx: Koa.Context) => Promise<void>) => {
    const route: Koa.Middleware = async (ctx) => {
      if (ctx.method !== 'POST') throw methodNotAllowedPath();
      await review(ctx);
    };
    exact.set(path, route);
    router.all(path, route);
  };
  for (const w of declared.webhooks) {
    const admit = admissionReview(w, log, inFlight);
    post(webhookPath(w), (ctx) => {
      const caller = callerOf(ctx, w.name);
      refuse(ctx, caller);
      return admit(ctx, caller.authenticated);
    });
  }
  for (const c of declared.conversions ?? [])
    post(conversionPath(c), conversionReview(c, log, inFlight));
  const routed = router.routes() as unknown as Koa.Middleware;
  return (ctx, next) => (exact.get(ctx.path) ?? routed)(ctx, next);
}

const refuseWithoutApiServer: Koa.Middleware = (ctx) => {
  throw forbiddenPath(
    'system:anonymous',
    ctx.method.toLowerCase(),
    ctx.path,
    'annex has no API server to delegate authorization to',
  );
};
