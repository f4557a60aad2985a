// One AdmissionReview in, one out, for a declared webhook. The sequence (content type →
// bytes in flight → bounded body → parse → decide within the API server's deadline →
// answer) is src/core/review-io.ts's reviewEndpoint, shared with the conversion server;
// here only what is admission's: the envelope, matching the declaration, depth, the
// handler told whether the caller is the API server (ReviewContext), the patch, the
// answer in the request's apiVersion, one log line of bounded identifiers. A handler that
// throws a StatusError has denied the request with that Status; one that throws anything
// else, overruns or cannot evaluate the object gets its registration's failurePolicy:
// never an HTTP 500.
import type Koa from 'koa';
import { StatusError } from '../core/status.js';
import { errorFields, flatLines, logField, type Logger } from '../log.js';
import {
  inFlightBytes,
  isThenable,
  OverrunError,
  reviewEndpoint,
  type InFlight,
} from '../core/review-io.js';
import { jsonPatch } from './patch.js';
import {
  MAX_OBJECT_DEPTH,
  parseReview,
  reviewResponse,
  tooDeep,
  type AdmissionRequest,
  type AdmissionResponse,
} from './review.js';
import { allow, type Verdict } from './verdict.js';
import { matchingRegistration, type Registration, type Webhook } from './webhook.js';
import { cloneJson, isObject } from '../json.js';
import { histogram } from '../core/metric.js';

export { inFlightBytes, type InFlight } from '../core/review-io.js';

/** An AdmissionReview carries object and oldObject, each up to the API server's 3 MiB. */
export const MAX_REVIEW_BYTES = 7 * 1024 * 1024;

/** One histogram for every review, by webhook and decision (allow, patch, deny). */
const reviewSeconds = histogram({
  name: 'annex_admission_review_duration_seconds',
  help: 'Time to answer an AdmissionReview, by webhook and decision.',
  labelNames: ['webhook', 'decision'],
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 5],
});

/**
 * One webhook's endpoint (the shared sequence is src/core/review-io.ts's reviewEndpoint):
 * the chain (src/server/app.ts) has matched its path and POST and tells whether the caller
 * presented a client certificate from admission.clientCA.
 */
export function admissionReview(
  webhook: Webhook,
  log: Logger,
  inFlight: InFlight = inFlightBytes(Infinity),
): (ctx: Koa.Context, authenticated: boolean) => Promise<void> {
  const reviews = flatLines(log);
  return reviewEndpoint<Review, Verdict, AdmissionResponse, boolean>(
    {
      maxBytes: MAX_REVIEW_BYTES,
      decode(body) {
        const { apiVersion, request } = parseReview(body);
        return {
          apiVersion,
          request,
          // The declaration is the filter too: a request no registration could have sent is let be.
          registration: matchingRegistration(webhook, request),
          who: {
            webhook: webhook.name,
            uid: logField(request.uid),
            kind: logField(request.kind.kind),
            namespace: logField(request.namespace ?? ''),
            name: logField(nameOf(request)),
          },
        };
      },
      decide({ request, registration }, budget, authenticated) {
        const deep = tooDeep(request);
        if (deep) {
          throw new WebhookFailure(
            400,
            'BadRequest',
            `cannot evaluate request.${deep}: it is nested more than ${MAX_OBJECT_DEPTH} levels deep`,
          );
        }
        if (!registration) return allow();
        // A mutating handler changes its own copy; the original is what the patch is from.
        const mine =
          webhook.type === 'mutating' && request.object
            ? { ...request, object: cloneJson(request.object) }
            : request;
        return statusErrorDenies(() => webhook.admit(mine, { ...budget, authenticated }));
      },
      respond: ({ request }, verdict) => toResponse(webhook, request, verdict),
      failed({ request, registration, who }, err) {
        log.error({ ...who, ...errorFields(err) }, 'admission webhook failed');
        return toResponse(webhook, request, failed(registration, webhook, err));
      },
      encode: ({ apiVersion }, response) => reviewResponse(apiVersion, response),
      done({ request, who }, response, ms, authenticated) {
        const decision = !response.allowed ? 'deny' : response.patch ? 'patch' : 'allow';
        reviewSeconds.observe({ webhook: webhook.name, decision }, ms / 1000);
        // Identifiers only, each bounded: the object's contents never reach the log.
        reviews.info(
          {
            ...who,
            operation: request.operation,
            dryRun: request.dryRun === true,
            authenticated,
            decision,
            ms: Math.round(ms * 100) / 100,
          },
          'admission review',
        );
      },
    },
    inFlight,
  );
}

/** A decoded AdmissionReview and what the steps after decoding need of it. */
interface Review {
  apiVersion: ReturnType<typeof parseReview>['apiVersion'];
  request: AdmissionRequest;
  registration: Registration | undefined;
  who: Record<string, string>;
}

/** request.name, or the object's metadata.name where that is a string. */
function nameOf(request: AdmissionRequest): string {
  if (request.name) return request.name;
  const meta: unknown = request.object?.metadata;
  return isObject(meta) && typeof meta.name === 'string' ? meta.name : '';
}

/**
 * A StatusError thrown (or rejected) by a handler is a decision, not a failure: the denial
 * its Status describes, whatever the failurePolicy, as a handler's `deny()` would be. Any
 * other error is passed on to the failurePolicy. A synchronous handler stays synchronous,
 * so its answer needs no timer (review-io's `within`).
 */
function statusErrorDenies(admit: () => Verdict | Promise<Verdict>): Verdict | Promise<Verdict> {
  const denial = (err: unknown): Verdict => {
    if (err instanceof StatusError) return { allowed: false, status: err.status };
    throw err;
  };
  try {
    const verdict = admit();
    return isThenable(verdict) ? Promise.resolve(verdict).catch(denial) : verdict;
  } catch (err) {
    return denial(err);
  }
}

/** Why a webhook could not decide, with the Status code it answers under failurePolicy Fail. */
class WebhookFailure extends Error {
  constructor(
    readonly code: number,
    readonly reason: 'Timeout' | 'BadRequest',
    message: string,
  ) {
    super(message);
  }
}

/**
 * What the API server would do with a webhook that failed: Ignore allows (with a warning
 * saying so), Fail denies. The message names the error's class only: a handler's message
 * may quote the object.
 */
function failed(registration: Registration | undefined, webhook: Webhook, err: unknown): Verdict {
  const known =
    err instanceof OverrunError
      ? new WebhookFailure(504, 'Timeout', err.message)
      : err instanceof WebhookFailure
        ? err
        : undefined;
  const what = known ? known.message : `failed: ${errorFields(err).error}`;
  const message = `annex webhook "${registration?.name ?? webhook.name}" ${what}`;
  if (registration?.failurePolicy === 'Ignore') {
    return allow([`${message}; allowed (failurePolicy Ignore)`]);
  }
  const status = known
    ? new StatusError(known.code, known.reason, message).status
    : new StatusError(500, 'InternalError', message).status;
  return { allowed: false, status };
}

function toResponse(webhook: Webhook, request: AdmissionRequest, v: Verdict): AdmissionResponse {
  const base = { uid: request.uid, ...(v.warnings?.length ? { warnings: v.warnings } : {}) };
  if (!v.allowed) return { ...base, allowed: false, status: v.status };
  if (webhook.type === 'mutating' && v.object && request.object) {
    const ops = jsonPatch(request.object, v.object);
    if (ops.length) {
      return {
        ...base,
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
      };
    }
  }
  return { ...base, allowed: true };
}
