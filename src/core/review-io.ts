// What every review the API server POSTs to annex shares (AdmissionReview, ConversionReview):
// JSON only → hold its bytes in flight (or 429) → a bounded body → parse → decide within
// the API server's deadline → one serialised answer that counts as in flight until sent.
// reviewEndpoint is that sequence, once; the review-specific parts (envelope, decision,
// failure, answer, log line) are the ReviewSpec each kind of review gives it.
import type { IncomingMessage } from 'node:http';
import type { Http2ServerRequest } from 'node:http2';
import type Koa from 'koa';
import { badRequest, StatusError, unsupportedMediaType } from './status.js';

/** The webhook default when ?timeout= is absent (admissionregistration v1 default). */
const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * Answer this long before the API server gives up: its timer runs from before it sends the
 * review (a 1 MB object takes a while to write on a busy node) until it has read the answer.
 * A fifth of the timeout, at least 250 ms: on a 2-core machine with a core kept busy (a
 * 900 KB review, 5 s timeout) 250 ms alone was overrun by 0.5 s, and a tenth failed 2 runs
 * of 4 (the API server answering 500 before annex's deny arrived).
 */
const DEADLINE_MARGIN_MS = 250;
const DEADLINE_MARGIN_SHARE = 0.2;

/** Review bytes held at once, across every webhook and converter (admission.maxInFlightBytes). */
export type InFlight = ReturnType<typeof inFlightBytes>;

/**
 * The bytes of reviews in flight: a review holds its size from before its body is read
 * until its answer is sent (or the connection closes). Beyond the bound a review is
 * refused with 429 rather than let memory grow; one review alone is always admitted.
 */
export function inFlightBytes(max: number) {
  let total = 0;
  return {
    hold(ctx: Koa.Context, bytes: number) {
      if (total > 0 && total + bytes > max) {
        ctx.set('Retry-After', '1');
        throw new StatusError(
          429,
          'TooManyRequests',
          `too many review bytes in flight (limit ${max}); retry later`,
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

export interface ReceivedReview {
  body: unknown;
  /** Sends the answer (serialised here, so its bytes count as in flight until it is sent). */
  answer(value: unknown): void;
}

/**
 * Content type, in-flight hold, bounded read and JSON parse: every failure a Status
 * (415, 429, 413, 400), thrown before the review-specific code runs.
 */
export async function receiveReview(
  ctx: Koa.Context,
  inFlight: InFlight,
  maxBytes: number,
): Promise<ReceivedReview> {
  // By header, not ctx.is(): type-is sees no body in an HTTP/2 request without content-length.
  if (!/^application\/json\s*(;|$)/i.test(ctx.get('content-type')))
    throw unsupportedMediaType(ctx.get('content-type') || '(none)');
  const held = inFlight.hold(ctx, declaredLength(ctx, maxBytes));
  // With the declared length, a body announced over the limit is a 413 at once, before
  // a byte of it is waited for.
  if (Number(ctx.get('content-length')) > maxBytes) throw tooLarge();
  const buf = await readBody(ctx.req, maxBytes);
  held.resize(buf.length);
  let body: unknown;
  try {
    body = JSON.parse(buf.toString('utf8'));
  } catch (e) {
    throw badRequest(`the request body is not valid JSON: ${(e as Error).message}`);
  }
  return {
    body,
    answer(value) {
      const bytes = Buffer.from(JSON.stringify(value));
      held.resize(buf.length + bytes.length);
      ctx.type = 'application/json';
      ctx.body = bytes;
    },
  };
}

/**
 * The request body, at most `limit` bytes, in one Buffer: 413 as soon as more arrive
 * (the rest is left for unread-body.ts to discard), 400 if the client gave up, the
 * stream's own error otherwise: raw-body's contract and Status answers, with two
 * listeners instead of five and no async resource per request.
 */
const tooLarge = () => new StatusError(413, 'RequestEntityTooLarge', 'request entity too large');

function readBody(req: IncomingMessage | Http2ServerRequest, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    if (!req.readable) return reject(new Error('stream is not readable'));
    const chunks: Buffer[] = [];
    let received = 0;
    const done = (err: Error | undefined) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onEnd);
      req.off('aborted', onAborted);
      req.off('close', onClose);
      if (!err)
        return resolve(
          chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received),
        );
      req.unpipe();
      req.pause();
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        done(tooLarge());
      } else chunks.push(chunk);
    };
    const onEnd = (err?: Error) => done(err);
    const onAborted = () => done(badRequest('request aborted'));
    // Closed before the end without an 'aborted' (HTTP/2 streams): nothing more will come.
    const onClose = () => done(badRequest('request aborted'));
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onEnd);
    req.once('aborted', onAborted);
    req.once('close', onClose);
  });
}

/** Content-Length if the request declares one within the limit; else the limit (chunked). */
function declaredLength(ctx: Koa.Context, max: number): number {
  const n = Number(ctx.get('content-length') || NaN);
  return Number.isSafeInteger(n) && n >= 0 ? Math.min(n, max) : max;
}

/** `?timeout=10s` (the remaining deadline, rounded up) → our budget in ms. */
export function budgetMs(q: unknown, defaultMs = DEFAULT_TIMEOUT_MS): number {
  const m = typeof q === 'string' ? /^(\d+)s$/.exec(q) : null;
  const ms = m ? Number(m[1]) * 1000 : defaultMs;
  return Math.max(ms - Math.max(DEADLINE_MARGIN_MS, ms * DEADLINE_MARGIN_SHARE), 50);
}

/** A handler that did not finish within the API server's deadline. */
export class OverrunError extends Error {
  constructor(readonly budgetMs: number) {
    super(`could not decide within ${budgetMs} ms`);
  }
}

/** A running budget: aborted when it ends, and when that is (performance.now() ms). */
export interface Budget {
  signal: AbortSignal;
  /** For work that runs synchronously and so cannot see `signal` abort: it checks the clock. */
  deadline: number;
}

/**
 * Runs `work` (sync or async) within the budget, counted from `since` (performance.now()
 * ms: when the review arrived, so that reading and parsing a large one, slow on a busy
 * machine, spend it too); its signal aborts when the budget ends, and an overrun rejects
 * with OverrunError, whatever the work does afterwards. Only asynchronous work arms a
 * timer: a synchronous result cannot be interrupted, and is answered as it returns (the
 * timer could never have fired before it).
 */
export async function within<T>(
  budget: number,
  work: (b: Budget) => T | Promise<T>,
  since = performance.now(),
): Promise<T> {
  const ac = new AbortController();
  const deadline = since + budget;
  const result = work({ signal: ac.signal, deadline });
  if (!isThenable(result)) return result;
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => {
        ac.abort();
        reject(new OverrunError(budget));
      },
      Math.max(0, deadline - performance.now()),
    );
    result.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err as Error);
      },
    );
  });
}

export const isThenable = <T>(v: T | PromiseLike<T>): v is PromiseLike<T> =>
  typeof (v as { then?: unknown } | null)?.then === 'function';

/** What one kind of review (admission, conversion) adds to the shared sequence. */
export interface ReviewSpec<Req, Decision, Res, Caller> {
  /** Bound on one review's bytes (413 beyond it). */
  maxBytes: number;
  /** The API server's deadline when the review's ?timeout= is absent. */
  defaultTimeoutMs?: number;
  /** The envelope → the request (a StatusError, 400, if it is not one). */
  decode(body: unknown): Req;
  /** The handler, within the budget (sync or async; may throw). */
  decide(req: Req, budget: Budget, caller: Caller): Decision | Promise<Decision>;
  /** The decision → the response (may throw too: it is then a failure). */
  respond(req: Req, decision: Decision): Res;
  /** A throw, an overrun (OverrunError) or a response that could not be made → the answer. */
  failed(req: Req, err: unknown): Res;
  /** The response → the review sent back. */
  encode(req: Req, res: Res): unknown;
  /** After the answer: metrics and the one log line. */
  done(req: Req, res: Res, ms: number, caller: Caller): void;
}

/**
 * One review endpoint: receive (415, 429, 413, 400 as Status), decode, decide within the
 * API server's deadline counted from arrival, map any failure to the spec's answer (never
 * an HTTP 500), encode, answer, then `done`. The router has matched path and method.
 */
export function reviewEndpoint<Req, Decision, Res, Caller = undefined>(
  spec: ReviewSpec<Req, Decision, Res, Caller>,
  inFlight: InFlight,
): (ctx: Koa.Context, caller: Caller) => Promise<void> {
  return async (ctx, caller) => {
    const arrived = performance.now();
    const received = await receiveReview(ctx, inFlight, spec.maxBytes);
    const req = spec.decode(received.body);
    let res: Res;
    try {
      const budget = budgetMs(ctx.query.timeout, spec.defaultTimeoutMs);
      res = spec.respond(req, await within(budget, (b) => spec.decide(req, b, caller), arrived));
    } catch (err) {
      res = spec.failed(req, err);
    }
    received.answer(spec.encode(req, res));
    spec.done(req, res, performance.now() - arrived, caller);
  };
}
