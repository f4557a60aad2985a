// Overload protection, as kube-apiserver's max-in-flight filter and API Priority and
// Fairness do it in spirit: each request is put in one priority class by method and path
// alone (by the request-info step; the bound is checked after authentication, as
// k8s.io/apiserver does, so that fairness can key on the caller), each class has its
// own bound on requests in flight, and beyond it the request gets at once a 429 Status
// with Retry-After. Separate budgets are the priority: a runaway client that fills
// `requests` cannot take a slot from the API server's own calls.
// - review: Admission- and ConversionReviews (POST /validate|mutate|convert/...): the
//   cluster's write path waits on these;
// - discovery: GET /api, /apis, /apis/<group>[/<version>], /openapi/..., /version: the
//   aggregator's availability probe and discovery (probes /livez, /readyz, /healthz are
//   answered before this step and never counted);
// - watch: long-running requests, counted until their response closes, never against the
//   short-request budget;
// - requests: everything else (get, list, /metrics).
// Per request: a few string checks, a counter, no allocation (a watch registers one
// close listener).
import type Koa from 'koa';
import { StatusError } from '../core/status.js';
import { counter, gauge } from '../core/metric.js';

export const PRIORITIES = ['review', 'discovery', 'watch', 'requests'] as const;
export type Priority = (typeof PRIORITIES)[number];
export type InFlightLimits = Record<Priority, number>;

/** What the client is told to wait, in seconds (kube-apiserver says 1 as well). */
const RETRY_AFTER_SECONDS = 1;

// As kube-apiserver's max-in-flight filter words it; serialised once.
const REFUSAL = JSON.stringify(
  new StatusError(429, 'TooManyRequests', 'Too many requests, please try again later.', {
    retryAfterSeconds: RETRY_AFTER_SECONDS,
  }).status,
);

const rejected = counter({
  name: 'annex_requests_rejected_total',
  help: 'Requests refused with 429 because their priority class was at its in-flight bound.',
  labelNames: ['priority'],
});

/** The class of a request, from its method and raw URL (path and query). */
export function priorityOf(method: string, url: string): Priority {
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (method === 'POST') {
    return path.startsWith('/validate/') ||
      path.startsWith('/mutate/') ||
      path.startsWith('/convert/')
      ? 'review'
      : 'requests';
  }
  if (method !== 'GET') return 'requests';
  if (url.includes('watch') && isWatch(path, q < 0 ? '' : url.slice(q + 1))) return 'watch';
  if (isDiscovery(path)) return 'discovery';
  return 'requests';
}

/** ?watch=<anything but 0/false> or the legacy /watch/ path segment (as request-info reads it). */
function isWatch(path: string, query: string): boolean {
  if (/^\/apis?\/(?:[^/]+\/){0,2}watch\//.test(path)) return true;
  if (!query.includes('watch')) return false;
  const v = new URLSearchParams(query).get('watch');
  return v !== null && v !== '0' && v.toLowerCase() !== 'false';
}

function isDiscovery(path: string): boolean {
  if (path === '/api' || path === '/apis' || path === '/version' || path === '/api/v1') return true;
  if (path.startsWith('/openapi/')) return true;
  if (!path.startsWith('/apis/')) return false;
  // /apis/<group> or /apis/<group>/<version>: at most one more slash after /apis/.
  const rest = path.length > 6 && path.endsWith('/') ? path.slice(6, -1) : path.slice(6);
  const slash = rest.indexOf('/');
  return rest !== '' && (slash < 0 || rest.indexOf('/', slash + 1) < 0);
}

export interface Overload {
  middleware: Koa.Middleware;
  /** Requests in flight per class (for tests and the gauge). */
  inFlight(): Readonly<InFlightLimits>;
}

/** The step itself: count, or refuse with 429 + Retry-After. */
export function overload(limits: InFlightLimits): Overload {
  const held: InFlightLimits = { review: 0, discovery: 0, watch: 0, requests: 0 };
  const refusedBy = {
    review: rejected.labels('review'),
    discovery: rejected.labels('discovery'),
    watch: rejected.labels('watch'),
    requests: rejected.labels('requests'),
  };
  inFlightGauge(() => held);
  const releaseWatch = () => void held.watch--;

  const middleware: Koa.Middleware = async (ctx, next) => {
    // Decided once by the chain's request-info step (request-kind.ts); alone, here.
    const state = ctx.state as { priority?: Priority };
    const p = (state.priority ??= priorityOf(ctx.method, ctx.url));
    if (held[p] >= limits[p]) {
      refusedBy[p].inc();
      refuse(ctx);
      return;
    }
    held[p]++;
    if (p === 'watch') {
      // A watch's response outlives the middleware chain: count it until it closes.
      ctx.res.once('close', releaseWatch);
      return next();
    }
    try {
      await next();
    } finally {
      held[p]--;
    }
  };
  return { middleware, inFlight: () => held };
}

function refuse(ctx: Koa.Context): void {
  ctx.status = 429;
  ctx.set('Retry-After', String(RETRY_AFTER_SECONDS));
  ctx.set('Content-Type', 'application/json');
  ctx.body = REFUSAL;
}

/**
 * Fairness by caller within a class, once authentication has said who the caller is (the
 * front-proxy user: every aggregated request arrives from the API server's address, so the
 * address is no key). With n callers holding slots of a class, a caller may take a new one
 * only while it holds fewer than ceil(bound / n): one client flooding discovery keeps the
 * others' share instead of taking every slot, and a lone caller still has the whole bound.
 * Reviews are exempt: their one caller is the API server.
 */
export function fairShare(limits: InFlightLimits): Koa.Middleware {
  const byClass = new Map<Priority, Map<string, number>>(
    PRIORITIES.map((p) => [p, new Map<string, number>()]),
  );
  return async (ctx, next) => {
    const state = ctx.state as { priority?: Priority; user?: { name?: string } };
    const p = state.priority;
    const user = state.user?.name;
    if (!p || p === 'review' || user === undefined) return next();
    const held = byClass.get(p)!;
    const mine = held.get(user) ?? 0;
    const callers = held.size + (mine ? 0 : 1);
    if (mine >= Math.max(1, Math.ceil(limits[p] / callers))) {
      refusedBy(p);
      refuse(ctx);
      return;
    }
    held.set(user, mine + 1);
    const release = () => {
      const n = (held.get(user) ?? 1) - 1;
      if (n > 0) held.set(user, n);
      else held.delete(user);
    };
    if (p === 'watch') {
      ctx.res.once('close', release);
      return next();
    }
    try {
      await next();
    } finally {
      release();
    }
  };
}
const refusedBy = (p: Priority) => rejected.labels(p).inc();

/** annex_requests_in_flight{priority}: read from the newest overload step at scrape time. */
let readHeld: () => InFlightLimits = () => ({ review: 0, discovery: 0, watch: 0, requests: 0 });
function inFlightGauge(read: () => InFlightLimits): void {
  readHeld = read;
  gauge({
    name: 'annex_requests_in_flight',
    help: 'Requests in flight, by priority class.',
    labelNames: ['priority'],
    collect() {
      const h = readHeld();
      for (const p of PRIORITIES) this.set({ priority: p }, h[p]);
    },
  });
}
