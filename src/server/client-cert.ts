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
import { unauthorized } from '../core/status.js';
import type { Logger } from '../log.js';
import type { Feature } from '../core/feature.js';
import type { Endpoint } from './request-kind.js';

/** Why the request's client certificate does not chain to `roots`, or undefined when it does. */
function clientCertProblem(ctx: Koa.Context, roots: X509Certificate[]): string | undefined {
  const socket = tlsSocketOf(ctx.req);
  const chain = socket ? peerChain(socket) : [];
  const r = verifyClientChain(chain, roots);
  return r.ok ? undefined : r.error;
}

/** The 401 for a request whose certificate does not chain to `roots` (logged with the reason). */
export function refuseUnlessChainsTo(
  ctx: Koa.Context,
  roots: X509Certificate[],
  log: Logger,
  what: string,
): void {
  const problem = clientCertProblem(ctx, roots);
  if (!problem) return;
  log.warn({ path: ctx.path, reason: problem }, `${what}: client certificate refused`);
  throw unauthorized();
}

export const PEER_PREFIX = '/peers/';

/** GET /peers/<feature>/<name>: the features' peer endpoints, for annex's own replicas only. */
export function peerEndpointMap(
  features: readonly Feature[],
  annexCa: () => X509Certificate[],
  log: Logger,
): Map<string, Endpoint> {
  const endpoints = new Map<string, Endpoint>();
  for (const f of features) {
    for (const [name, handler] of Object.entries(f.peer ?? {})) {
      endpoints.set(`${PEER_PREFIX}${f.name}/${name}`, {
        kind: 'peer',
        method: 'GET',
        authenticate: (ctx) => refuseUnlessChainsTo(ctx, annexCa(), log, 'peer endpoint'),
        async serve(ctx) {
          const body = await handler();
          ctx.status = 200;
          ctx.set('Content-Type', 'application/json');
          ctx.body = JSON.stringify(body);
        },
      });
    }
  }
  return endpoints;
}
