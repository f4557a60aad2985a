// POST /mutate/<name> and /validate/<name>: one AdmissionReview in, one out.
// Read top to bottom: route → content type → bounded body → parse → decide within
// the API server's deadline → patch → answer in the request's apiVersion → one log line.
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

export function admissionWebhooks(webhooks: Webhook[], log: Logger): Koa.Middleware {
  const routes = new Map(
    webhooks.map((w) => [`/${w.type === 'mutating' ? 'mutate' : 'validate'}/${w.name}`, w]),
  );
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

    const verdict = await decideWithin(webhook, request, timeoutMs(ctx.query.timeout));
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
