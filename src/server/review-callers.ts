// Who sent an AdmissionReview, as far as annex can tell: the kube-apiserver, with a client
// certificate from admission.clientCA (its AdmissionConfiguration gives it one), or anyone
// who reaches annex's port. The listener only requests a certificate, so a cluster whose
// API server sends none keeps working; handlers are told (ReviewContext.authenticated).
// Counted for /readyz?verbose and annex_admission_reviews_total, so an operator sees
// whether the API server's calls present one.
import type { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type Koa from 'koa';
import { tlsSocketOf } from '../apiserver/auth/authenticate.js';
import { peerChain, verifyClientChain } from '../apiserver/auth/x509.js';
import type { AdmissionClientCa } from './admission-ca.js';
import { counter } from '../core/metric.js';

export type ReviewCaller = { authenticated: true } | { authenticated: false; reason: string };

/** A connection's verdict is reused this long, then dates are checked again (as delegated authn). */
const VERDICT_TTL_MS = 60_000;

const reviewsTotal = counter({
  name: 'annex_admission_reviews_total',
  help: 'AdmissionReviews received, by webhook and whether the caller presented a client certificate from admission.clientCA.',
  labelNames: ['webhook', 'authenticated'],
});

export interface ReviewCallers {
  /** The caller of this review (counted). */
  of(ctx: Koa.Context, webhook: string): ReviewCaller;
  /** What /readyz?verbose says of the callers so far: one line, never a failure. */
  report(): string;
}

export function reviewCallers(ca: AdmissionClientCa, now: () => number = Date.now): ReviewCallers {
  // One verdict per connection: the API server keeps its connections to a webhook open.
  const verdicts = new WeakMap<
    TLSSocket,
    { roots: X509Certificate[]; at: number; caller: ReviewCaller }
  >();
  const seen = {
    authenticated: { count: 0, at: 0 },
    unauthenticated: { count: 0, at: 0, reason: '' },
  };

  function check(socket: TLSSocket | undefined, roots: X509Certificate[], t: number): ReviewCaller {
    if (!roots.length) return { authenticated: false, reason: ca.problem() ?? 'no CA' };
    const r = verifyClientChain(socket ? peerChain(socket) : [], roots, t);
    return r.ok ? { authenticated: true } : { authenticated: false, reason: r.error };
  }

  return {
    of(ctx, webhook) {
      const t = now();
      const roots = ca.certs();
      const socket = tlsSocketOf(ctx.req);
      let v = socket && verdicts.get(socket);
      if (!v || v.roots !== roots || t - v.at >= VERDICT_TTL_MS) {
        v = { roots, at: t, caller: check(socket, roots, t) };
        if (socket) verdicts.set(socket, v);
      }
      const { caller } = v;
      if (caller.authenticated) seen.authenticated = { count: seen.authenticated.count + 1, at: t };
      else
        seen.unauthenticated = {
          count: seen.unauthenticated.count + 1,
          at: t,
          reason: caller.reason,
        };
      reviewsTotal.inc({ webhook, authenticated: String(caller.authenticated) });
      return caller;
    },
    report() {
      const t = now();
      const ago = (at: number) => `last ${Math.max(0, Math.round((t - at) / 1000))}s ago`;
      const problem = ca.problem();
      const { authenticated: a, unauthenticated: u } = seen;
      const parts = problem ? [problem] : [];
      if (!a.count && !u.count) parts.push('no AdmissionReview yet');
      else {
        const why = u.reason === problem ? '' : `: ${u.reason}`;
        parts.push(
          [
            a.count ? `${a.count} authenticated (${ago(a.at)})` : '0 authenticated',
            u.count ? `${u.count} unauthenticated (${ago(u.at)}${why})` : '0 unauthenticated',
          ].join(', '),
        );
      }
      return parts.join('; ');
    },
  };
}
