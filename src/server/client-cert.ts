// Peer endpoints (GET /peers/<feature>/<name>) open only for a client certificate from
// annex's own CA, outside the delegated authentication of the aggregated API: other
// replicas of annex read them with the serving certificate they share. (AdmissionReviews'
// callers are told apart in ./review-callers.ts.) The listener only requests certificates
// (src/server/listen.ts), so the chain is verified here, against exactly the CA meant,
// with the code delegated authentication uses.
import type { X509Certificate } from 'node:crypto';
import type Koa from 'koa';
import { tlsSocketOf } from '../apiserver/auth/authenticate.js';
import { peerChain, verifyClientChain } from '../apiserver/auth/x509.js';
import { methodNotAllowedPath, unauthorized } from '../core/status.js';
import type { Logger } from '../log.js';
import type { Feature } from '../core/feature.js';

/** Why the request's client certificate does not chain to `roots`, or undefined when it does. */
function clientCertProblem(ctx: Koa.Context, roots: X509Certificate[]): string | undefined {
  const socket = tlsSocketOf(ctx.req);
  const chain = socket ? peerChain(socket) : [];
  const r = verifyClientChain(chain, roots);
  return r.ok ? undefined : r.error;
}

/** 401 unless the request presents a certificate chaining to `roots` (logged with the reason). */
export function requireClientCert(
  roots: () => X509Certificate[],
  log: Logger,
  what: string,
): Koa.Middleware {
  return async (ctx, next) => {
    const problem = clientCertProblem(ctx, roots());
    if (problem) {
      log.warn({ path: ctx.path, reason: problem }, `${what}: client certificate refused`);
      throw unauthorized();
    }
    await next();
  };
}

export const PEER_PREFIX = '/peers/';

/** GET /peers/<feature>/<name>: the features' peer endpoints, for annex's own replicas only. */
export function peerEndpoints(
  features: readonly Feature[],
  annexCa: () => X509Certificate[],
  log: Logger,
): Koa.Middleware {
  const handlers = new Map<string, () => unknown>();
  for (const f of features) {
    for (const [name, handler] of Object.entries(f.peer ?? {})) {
      handlers.set(`${PEER_PREFIX}${f.name}/${name}`, handler);
    }
  }
  const gate = requireClientCert(annexCa, log, 'peer endpoint');
  return async (ctx, next) => {
    const handler = handlers.get(ctx.path);
    if (!handler) return next();
    if (ctx.method !== 'GET') throw methodNotAllowedPath();
    await gate(ctx, async () => {
      const body = await handler();
      ctx.status = 200;
      ctx.set('Content-Type', 'application/json');
      ctx.body = JSON.stringify(body);
    });
  };
}
