// The review endpoints: POST /validate/<name>, /mutate/<name> (one per declared webhook)
// and /convert/<name> (one per declared conversion), by exact path, sharing one bound on
// review bytes. Their authentication is the caller's client certificate, not delegated
// authentication (the API server calls webhooks with the credentials its admission
// config gives it): only AdmissionReviews are asked for it, because the API server calls
// conversion webhooks without one (apiextensions-apiserver gives them no kubeconfig).
import { admissionReview } from '../admission/server.js';
import { webhookPath, type Webhook } from '../admission/webhook.js';
import { inFlightBytes } from '../core/review-io.js';
import { unauthorized } from '../core/status.js';
import { conversionPath, type Conversion } from '../conversion/declare.js';
import { conversionReview } from '../conversion/server.js';
import type { Logger } from '../log.js';
import type { Endpoint } from './request-kind.js';
import type { ReviewCaller, ReviewCallers } from './review-callers.js';

export interface ReviewOptions {
  /** Review bytes held at once, across every webhook and conversion; beyond it a 429. */
  maxBytesInFlight?: number;
  /** Who sent each AdmissionReview: a client certificate from `admission.clientCA`, or not. */
  callers?: ReviewCallers;
  /** `admission.requireClientCert`: a review from any other caller is refused (401). */
  requireClientCert?: boolean;
}

const NO_CALLERS: ReviewCallers['of'] = () => ({
  authenticated: false,
  reason: 'admission.clientCA is not set',
});

/** The declared reviews' endpoints, by exact path, for the chain's steps. */
export function reviewEndpoints(
  declared: { webhooks: Webhook[]; conversions?: Conversion[] },
  log: Logger,
  opts: ReviewOptions = {},
): Map<string, Endpoint> {
  const endpoints = new Map<string, Endpoint>();
  const inFlight = inFlightBytes(opts.maxBytesInFlight ?? Infinity);
  const callers = opts.callers;
  const callerOf: ReviewCallers['of'] = callers ? (ctx, w) => callers.of(ctx, w) : NO_CALLERS;
  for (const w of declared.webhooks) {
    const admit = admissionReview(w, log, inFlight);
    endpoints.set(webhookPath(w), {
      kind: 'admission',
      method: 'POST',
      authenticate(ctx) {
        const caller = callerOf(ctx, w.name);
        (ctx.state as { reviewCaller?: ReviewCaller }).reviewCaller = caller;
        if (caller.authenticated || !opts.requireClientCert) return;
        log.warn(
          { path: ctx.path, reason: caller.reason },
          'admission review: client certificate refused',
        );
        throw unauthorized();
      },
      serve: (ctx) => {
        const caller = (ctx.state as { reviewCaller?: ReviewCaller }).reviewCaller;
        return admit(ctx, caller?.authenticated ?? false);
      },
    });
  }
  for (const c of declared.conversions ?? []) {
    endpoints.set(conversionPath(c), {
      kind: 'conversion',
      method: 'POST',
      authenticate: () => {}, // the API server presents no certificate to conversion webhooks
      serve: conversionReview(c, log, inFlight),
    });
  }
  return endpoints;
}
