// The one place the request path is composed. Read it top to bottom: each middleware
// does one thing, in the order k8s.io/apiserver's filter chain does it (WithRequestInfo,
// WithAuthentication, WithPriorityAndFairness / WithMaxInFlightLimit, WithAuthorization,
// then the handlers). Nothing below is specific to a feature: webhooks, conversions, peer
// endpoints and groups come from the features' declarations.
//
// Why this order (docs/architecture.md, "Why this order"):
// - request info first: every request is classified once (probe, admission review,
//   conversion review, peer, /metrics, API request) and an API request's RequestInfo
//   parsed once; every later step reads ctx.state instead of the path;
// - probes are answered right after: kubelet's and the aggregator's checks must not depend
//   on the API server (authentication) nor wait behind a full in-flight class;
// - authentication before the in-flight bounds, so fairness can key on the caller: a
//   review's caller is the API server's client certificate (admission.clientCA), a peer's
//   annex's CA, everything else delegated authentication (or refused with no API server);
// - authorization last, then routing: reviews and peers were authorized by their
//   certificate; metrics and API requests ask the API server (SubjectAccessReview).
// Before any of it, the connection layer answers on its own (connections.ts, listen.ts):
// TLS handshake, header and body deadlines (HTTP/2 bodies 408), the connection cap (503
// with Retry-After, Connection: close or GOAWAY); then steps 0–2 below wrap the chain:
// an unread body discarded or the connection closed, the access log, every failure a Status.
import type { X509Certificate } from 'node:crypto';
import Koa from 'koa';
import type { Webhook } from '../admission/webhook.js';
import type { DelegatedAuth } from '../apiserver/auth/index.js';
import { aggregatedApi } from '../apiserver/handler.js';
import { forbiddenPath, methodNotAllowedPath } from '../core/status.js';
import type { GroupVersionDecl } from '../core/types.js';
import type { Conversion } from '../conversion/declare.js';
import type { Logger } from '../log.js';
import type { Feature } from '../core/feature.js';
import { accessLog } from './access-log.js';
import { peerEndpointMap } from './client-cert.js';
import { statusErrors } from './errors.js';
import { health, type Readiness } from './health.js';
import { prometheusEndpoint } from './prometheus.js';
import { fairShare, overload, type InFlightLimits } from './overload.js';
import { classifiedOf, requestKind, type Endpoint } from './request-kind.js';
import type { ReviewCallers } from './review-callers.js';
import { reviewEndpoints } from './review-endpoints.js';
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
  const endpoints = new Map<string, Endpoint>([
    ...reviewEndpoints(parts, parts.log, {
      maxBytesInFlight: parts.maxReviewBytesInFlight,
      ...(parts.reviewCallers ? { callers: parts.reviewCallers } : {}),
      requireClientCert: parts.requireClientCert ?? false,
    }),
    ...(parts.annexCa && parts.features?.some((f) => f.peer)
      ? peerEndpointMap(parts.features, parts.annexCa, parts.log)
      : []),
  ]);
  // The connection layer's answers, before the chain proper:
  app.use(unreadBody()); // 0. an answer sent before its body was read: discard the rest, or close
  app.use(accessLog(parts.log)); // 1. one line per request: method, path, the code sent, latency
  app.use(statusErrors(parts.log)); // 2. every failure below → a Status JSON
  // The chain, in k8s.io/apiserver's order:
  app.use(requestKind(endpoints)); // 3. request info: what it is (probe, review, peer, metrics, API), parsed once
  app.use(health(parts.readiness)); // 4. probes: answered here, never authenticated nor counted
  app.use(authentication(parts)); // 5. who: the endpoint's certificate check, else delegated authn
  if (parts.maxInFlight) {
    app.use(overload(parts.maxInFlight).middleware); // 6. in-flight bound per priority class, else 429
    app.use(fairShare(parts.maxInFlight)); // 6b. each caller its share of its class, else 429
  }
  app.use(declaredEndpoints); // 7. reviews and peers: authorized by their certificate in 5
  if (parts.auth) app.use(parts.auth.authorize); // 7b. may they: SubjectAccessReview, cached
  app.use(prometheusEndpoint()); // 8. GET /metrics
  if (parts.groups.length) app.use(aggregatedApi(parts.groups, { stop: parts.stopWatches })); // 9. discovery, OpenAPI, get/list/watch
  return app;
}

/**
 * Step 5: a declared endpoint's caller is checked by its certificate (a wrong method is
 * not: step 7 answers it 405); metrics and API requests by delegated authentication
 * (front-proxy cert + X-Remote-*, client cert, token), or refused with no API server to
 * ask unless annex trusts loopback.
 */
function authentication(parts: AppParts): Koa.Middleware {
  const delegated = parts.auth
    ? parts.auth.authenticate
    : parts.trustLoopback
      ? undefined
      : refuseWithoutApiServer;
  return (ctx, next) => {
    const { endpoint } = classifiedOf(ctx);
    if (endpoint) {
      if (ctx.method === endpoint.method) endpoint.authenticate(ctx);
      return next();
    }
    return delegated ? delegated(ctx, next) : next();
  };
}

/** Step 7: the endpoint step 3 found by exact path, for its one method (else 405). */
const declaredEndpoints: Koa.Middleware = (ctx, next) => {
  const { endpoint } = classifiedOf(ctx);
  if (!endpoint) return next();
  if (ctx.method !== endpoint.method) throw methodNotAllowedPath();
  return endpoint.serve(ctx);
};

const refuseWithoutApiServer: Koa.Middleware = (ctx) => {
  throw forbiddenPath(
    'system:anonymous',
    ctx.method.toLowerCase(),
    ctx.path,
    'annex has no API server to delegate authorization to',
  );
};
