// POST /mutate/<name> and /validate/<name>: one AdmissionReview in, one out.
// Read top to bottom: route → content type → hold its bytes in flight (or 429) → bounded
// body → parse → depth → decide within the API server's deadline (a throw is a denial) →
// patch → answer in the request's apiVersion → one log line of bounded identifiers.
import type Koa from 'koa';
import { Histogram, register } from 'prom-client';
import getRawBody from 'raw-body';
import {
  badRequest,
  internalError,
  StatusError,
  unsupportedMediaType,
} from '../apiserver/status.js';
import { errorFields, logField, type Logger } from '../log.js';
import { jsonPatch } from './patch.js';
import {
  MAX_OBJECT_DEPTH,
  parseReview,
  reviewResponse,
  tooDeep,
  type AdmissionRequest,
  type AdmissionResponse,
} from './review.js';
import type { Verdict, Webhook } from './verdict.js';

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

export interface AdmissionServerOptions {
  /**
   * Review bytes (requests being read or decided, answers not yet sent) held at once;
   * unbounded if absent (the configuration's admission.maxInFlightBytes is the default).
   */
  maxInFlightBytes?: number;
}

export function admissionWebhooks(
  webhooks: Webhook[],
  log: Logger,
  options: AdmissionServerOptions = {},
): Koa.Middleware {
  const routes = new Map(
    webhooks.map((w) => [`/${w.type === 'mutating' ? 'mutate' : 'validate'}/${w.name}`, w]),
  );
  const inFlight = inFlightBytes(options.maxInFlightBytes ?? Infinity);
  return async (ctx, next) => {
    const webhook = routes.get(ctx.path);
    if (!webhook) return next();
    if (ctx.method !== 'POST') {
      throw new StatusError(
        405,
        'MethodNotAllowed',
        `${ctx.method} is not supported on admission webhook ${ctx.path}; use POST`,
      );
    }
    if (!ctx.is('application/json'))
      throw unsupportedMediaType(ctx.get('content-type') || '(none)');

    const start = process.hrtime.bigint();
    const held = inFlight.hold(ctx, declaredLength(ctx));
    const { bytes, body } = await readJson(ctx);
    held.resize(bytes);
    const { apiVersion, request } = parseReview(body);
    const who = {
      webhook: webhook.name,
      uid: logField(request.uid),
      kind: logField(request.kind.kind),
      namespace: logField(request.namespace ?? ''),
      name: logField(nameOf(request)),
    };

    let response: AdmissionResponse;
    try {
      const deep = tooDeep(request);
      const verdict = deep
        ? tooDeepVerdict(webhook, deep)
        : await decideWithin(webhook, request, timeoutMs(ctx.query.timeout));
      response = toResponse(webhook, request, verdict);
    } catch (err) {
      // A webhook must answer every review: a bug or an object it did not expect is a
      // denial the API server can show, logged by class only (the message may quote values).
      log.error({ ...who, ...errorFields(err) }, 'admission webhook failed');
      response = failedResponse(webhook, request, err);
    }
    // Serialised once, here, so the answer's bytes count as in flight until it is sent.
    const answer = Buffer.from(JSON.stringify(reviewResponse(apiVersion, response)));
    held.resize(bytes + answer.length);
    ctx.type = 'application/json';
    ctx.body = answer;

    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const decision = !response.allowed ? 'deny' : response.patch ? 'patch' : 'allow';
    reviewSeconds.observe({ webhook: webhook.name, decision }, ms / 1000);
    // Identifiers only, each bounded: the object's contents never reach the log.
    log.info(
      {
        ...who,
        operation: request.operation,
        dryRun: request.dryRun === true,
        decision,
        ms: Math.round(ms * 100) / 100,
      },
      'admission review',
    );
  };
}

/** The body, parsed, and its size; the raw bytes are let go at once. */
async function readJson(ctx: Koa.Context): Promise<{ bytes: number; body: unknown }> {
  const buf = await getRawBody(ctx.req, { limit: MAX_REVIEW_BYTES });
  try {
    return { bytes: buf.length, body: JSON.parse(buf.toString('utf8')) };
  } catch (e) {
    throw badRequest(`the request body is not valid JSON: ${(e as Error).message}`);
  }
}

/** Content-Length if the request declares one within the limit; else the limit (chunked). */
function declaredLength(ctx: Koa.Context): number {
  const n = Number(ctx.get('content-length') || NaN);
  return Number.isSafeInteger(n) && n >= 0 ? Math.min(n, MAX_REVIEW_BYTES) : MAX_REVIEW_BYTES;
}

/**
 * The bytes of reviews in flight: a review holds its size from before its body is read
 * until its answer is sent (or the connection closes). Beyond the bound a review is
 * refused with 429 rather than let memory grow; one review alone is always admitted.
 */
function inFlightBytes(max: number) {
  let total = 0;
  return {
    hold(ctx: Koa.Context, bytes: number) {
      if (total > 0 && total + bytes > max) {
        ctx.set('Retry-After', '1');
        throw new StatusError(
          429,
          'TooManyRequests',
          `too many AdmissionReview bytes in flight (limit ${max}); retry later`,
          { retryAfterSeconds: 1 },
        );
      }
      let held = bytes;
      let released = false;
      total += held;
      ctx.res.once('close', () => {
        released = true;
        total -= held;
      });
      return {
        resize(n: number) {
          if (released) return;
          total += n - held;
          held = n;
        },
      };
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** request.name, or the object's metadata.name where that is a string. */
function nameOf(request: AdmissionRequest): string {
  if (request.name) return request.name;
  const meta: unknown = request.object?.metadata;
  return isObject(meta) && typeof meta.name === 'string' ? meta.name : '';
}

function tooDeepVerdict(webhook: Webhook, field: 'object' | 'oldObject'): Verdict {
  return {
    allowed: false,
    status: badRequest(
      `annex webhook "${webhook.name}" cannot evaluate request.${field}: it is nested more than ${MAX_OBJECT_DEPTH} levels deep`,
    ).status,
  };
}

function failedResponse(webhook: Webhook, request: AdmissionRequest, err: unknown) {
  const cls = errorFields(err).error;
  return {
    uid: request.uid,
    allowed: false,
    status: internalError(
      `annex webhook "${webhook.name}" failed to evaluate the object (${cls}); see the annex log`,
    ).status,
  };
}

/** `?timeout=10s` (the remaining deadline, rounded up) → our budget in ms. */
function timeoutMs(q: unknown): number {
  const m = typeof q === 'string' ? /^(\d+)s$/.exec(q) : null;
  const ms = m ? Number(m[1]) * 1000 : DEFAULT_TIMEOUT_MS;
  return Math.max(ms - DEADLINE_MARGIN_MS, 50);
}

/** Runs the webhook with an abort signal; past the budget it denies rather than let the API server time out. */
async function decideWithin(
  webhook: Webhook,
  request: AdmissionRequest,
  budgetMs: number,
): Promise<Verdict> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Verdict>((resolve) => {
    timer = setTimeout(() => {
      ac.abort();
      resolve({
        allowed: false,
        status: new StatusError(
          504,
          'Timeout',
          `annex webhook "${webhook.name}" could not decide within ${budgetMs} ms`,
        ).status,
      });
    }, budgetMs);
  });
  try {
    return await Promise.race([Promise.resolve(webhook.admit(request, ac.signal)), late]);
  } finally {
    clearTimeout(timer);
  }
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
