// Step 3 of the chain (src/server/app.ts), as k8s.io/apiserver's WithRequestInfo is its
// first: every request is classified once, here, and every later step reads the result
// from ctx.state instead of looking at the path again:
// - probe: GET/HEAD /livez, /readyz, /healthz[/<check>]: answered next, never authenticated;
// - admission, conversion, peer: an exact path of a declared endpoint (a map lookup); the
//   endpoint authenticates its own caller by certificate and serves the request;
// - metrics: GET /metrics; api: everything else, its RequestInfo (verb, group, resource,
//   namespace, name) parsed here, once (a malformed one is a 400 Status at once).
// The priority class (overload.ts) is decided here too, from the method and URL.
import type Koa from 'koa';
import { parseRequestInfo, type RequestInfo } from '../apiserver/request-info.js';
import { priorityOf, type Priority } from './overload.js';

const HEALTH_PATHS = new Set(['/livez', '/readyz', '/healthz']);

export type RequestKind = 'probe' | 'admission' | 'conversion' | 'peer' | 'metrics' | 'api';

/** A declared endpoint served outside delegated authentication, by exact path. */
export interface Endpoint {
  kind: 'admission' | 'conversion' | 'peer';
  /** The one method it serves; any other is a 405 Status. */
  method: 'POST' | 'GET';
  /** The endpoint's authentication step: throws a 401 Status for a caller it refuses. */
  authenticate(ctx: Koa.Context): void;
  /** The endpoint itself, once authenticated and admitted by the in-flight bounds. */
  serve(ctx: Koa.Context): Promise<void>;
}

/** What step 3 puts on ctx.state for the steps after it. */
export interface Classified {
  kind: RequestKind;
  priority: Priority;
  /** For admission, conversion and peer requests. */
  endpoint?: Endpoint;
  /** For probes: /<root>/<check>. */
  probe?: { root: string; check: string | undefined };
  /** For metrics and API requests (what authorization and the aggregated API read). */
  requestInfo?: RequestInfo;
}

export const classifiedOf = (ctx: Koa.Context) => ctx.state as Partial<Classified>;

/** Step 3: classify, with the declared endpoints keyed by their exact path. */
export function requestKind(endpoints: ReadonlyMap<string, Endpoint>): Koa.Middleware {
  return async (ctx, next) => {
    const state = classifiedOf(ctx);
    state.priority = priorityOf(ctx.method, ctx.url);
    const endpoint = endpoints.get(ctx.path);
    if (endpoint) {
      state.kind = endpoint.kind;
      state.endpoint = endpoint;
    } else if (!(state.probe = probeOf(ctx.method, ctx.path))) {
      asApiRequest(ctx);
    } else state.kind = 'probe';
    await next();
  };
}

/** A probe path, split: /livez, /readyz/<check>; undefined for anything else. */
export function probeOf(method: string, path: string): Classified['probe'] {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  const [, root = '', check, extra] = path.split('/');
  if (!HEALTH_PATHS.has(`/${root}`) || extra !== undefined) return undefined;
  return { root, check };
}

/**
 * Classifies the request as metrics or an API request and parses its RequestInfo; also
 * for a probe of a check that does not exist, which goes on to a 404 as any unknown path.
 */
export function asApiRequest(ctx: Koa.Context): void {
  const state = classifiedOf(ctx);
  state.probe = undefined;
  state.kind = ctx.path === '/metrics' && ctx.method === 'GET' ? 'metrics' : 'api';
  state.requestInfo = parseRequestInfo(ctx.method, ctx.path, ctx.querystring);
}
