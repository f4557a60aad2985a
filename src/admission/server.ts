// One AdmissionReview in, one out, for a declared webhook. Read top to bottom: content
// type → bounded body → parse → match the declaration → decide within the API server's
// deadline (failurePolicy on error) → patch → answer in the request's apiVersion → one log line.
import type Koa from 'koa';
import { Histogram, register } from 'prom-client';
import getRawBody from 'raw-body';
import { badRequest, StatusError, unsupportedMediaType } from '../apiserver/status.js';
import type { Logger } from '../log.js';
import { jsonPatch } from './patch.js';
import {
  parseReview,
  reviewResponse,
  type AdmissionRequest,
  type AdmissionResponse,
} from './review.js';
import { allow, type Verdict } from './verdict.js';
import { matchingRegistration, type Registration, type Webhook } from './webhook.js';

/** An AdmissionReview carries object and oldObject, each up to the API server's 3 MiB. */
export const MAX_REVIEW_BYTES = 7 * 1024 * 1024;
/** The webhook default when ?timeout= is absent (admissionregistration v1 default). */
const DEFAULT_TIMEOUT_MS = 10_000;
/** Answer this much before the API server gives up, to leave room for the network. */
const DEADLINE_MARGIN_MS = 250;

/** One histogram for every review, by webhook and decision (allow, patch, deny). */
const reviewSeconds =
  (register.getSingleMetric('annex_admission_review_duration_seconds') as Histogram | undefined) ??
  new Histogram({
    name: 'annex_admission_review_duration_seconds',
    help: 'Time to answer an AdmissionReview, by webhook and decision.',
    labelNames: ['webhook', 'decision'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 5],
  });

/** One webhook's endpoint: the router (src/server/app.ts) has matched its path and POST. */
export function admissionReview(
  webhook: Webhook,
  log: Logger,
): (ctx: Koa.Context) => Promise<void> {
  return async (ctx) => {
    // By header, not ctx.is(): type-is sees no body in an HTTP/2 request without content-length.
    if (!/^application\/json\s*(;|$)/i.test(ctx.get('content-type')))
      throw unsupportedMediaType(ctx.get('content-type') || '(none)');

    const start = process.hrtime.bigint();
    const raw = await getRawBody(ctx.req, { limit: MAX_REVIEW_BYTES, encoding: 'utf8' });
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch (e) {
      throw badRequest(`the request body is not valid JSON: ${(e as Error).message}`);
    }
    const { apiVersion, request } = parseReview(body);

    // The declaration is the filter too: a request no registration could have sent is let be.
    const registration = matchingRegistration(webhook, request);
    const verdict = registration
      ? await decideWithin(webhook, registration, request, timeoutMs(ctx.query.timeout), log)
      : allow();
    const response = toResponse(webhook, request, verdict);
    ctx.type = 'application/json';
    ctx.body = reviewResponse(apiVersion, response);

    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const decision = !response.allowed ? 'deny' : response.patch ? 'patch' : 'allow';
    reviewSeconds.observe({ webhook: webhook.name, decision }, ms / 1000);
    // Identifiers only: the object's contents never reach the log.
    log.info(
      {
        webhook: webhook.name,
        uid: request.uid,
        kind: request.kind.kind,
        namespace: request.namespace ?? '',
        name: request.name || request.object?.metadata?.name || '',
        operation: request.operation,
        dryRun: request.dryRun ?? false,
        decision,
        ms: Math.round(ms * 100) / 100,
      },
      'admission review',
    );
  };
}

/** `?timeout=10s` (the remaining deadline, rounded up) → our budget in ms. */
function timeoutMs(q: unknown): number {
  const m = typeof q === 'string' ? /^(\d+)s$/.exec(q) : null;
  const ms = m ? Number(m[1]) * 1000 : DEFAULT_TIMEOUT_MS;
  return Math.max(ms - DEADLINE_MARGIN_MS, 50);
}

/**
 * Runs the handler within the API server's deadline. A handler that throws or overruns
 * gets the answer its registration's failurePolicy gives: Ignore allows (with a warning),
 * Fail denies — as the API server itself would treat a webhook that failed.
 */
async function decideWithin(
  webhook: Webhook,
  registration: Registration,
  request: AdmissionRequest,
  budgetMs: number,
  log: Logger,
): Promise<Verdict> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Error>((resolve) => {
    timer = setTimeout(() => {
      ac.abort();
      resolve(new WebhookFailure(504, 'Timeout', `could not decide within ${budgetMs} ms`));
    }, budgetMs);
  });
  // A mutating handler changes its own copy; the original is what the patch is computed from.
  const mine =
    webhook.type === 'mutating' && request.object
      ? { ...request, object: structuredClone(request.object) }
      : request;
  try {
    const outcome = await Promise.race([
      Promise.resolve()
        .then(() => webhook.admit(mine, ac.signal))
        .catch((e: unknown) => (e instanceof Error ? e : new Error(String(e)))),
      late,
    ]);
    if (!(outcome instanceof Error)) return outcome;
    return failed(webhook, registration, request, outcome, log);
  } finally {
    clearTimeout(timer);
  }
}

class WebhookFailure extends Error {
  constructor(
    readonly code: number,
    readonly reason: 'Timeout' | 'InternalError',
    message: string,
  ) {
    super(message);
  }
}

function failed(
  webhook: Webhook,
  registration: Registration,
  request: AdmissionRequest,
  err: Error,
  log: Logger,
): Verdict {
  const cause = err instanceof WebhookFailure ? err : undefined;
  const what = cause ? cause.message : `failed: ${err.name}`;
  const message = `annex webhook "${registration.name}" ${what}`;
  // The error's class only: a handler's message may quote the object.
  log.error(
    { webhook: webhook.name, uid: request.uid, error: err.name, kind: request.kind.kind },
    'admission handler failed',
  );
  if (registration.failurePolicy === 'Ignore') {
    return allow([`${message}; allowed (failurePolicy Ignore)`]);
  }
  return {
    allowed: false,
    status: new StatusError(cause?.code ?? 500, cause?.reason ?? 'InternalError', message).status,
  };
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
