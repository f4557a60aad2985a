// One ConversionReview in, one out, for a declared conversion. The sequence (content
// type → bytes in flight → bounded body → parse → decide within the API server's
// deadline → answer) is src/core/review-io.ts's reviewEndpoint, shared with the admission
// server; here only what is conversion's: the envelope (400 if it is not a review),
// converting, the answer with the uid, one log line of bounded identifiers. A converter that throws, overruns, or returns metadata it may not
// change is a `Failed` result with a message: never an HTTP 500, never a value in a log.
import { histogram } from '../core/metric.js';
import type Koa from 'koa';
import { errorFields, logField, type Logger } from '../log.js';
import { inFlightBytes, OverrunError, reviewEndpoint, type InFlight } from '../core/review-io.js';
import type { Conversion } from './declare.js';
import {
  ConversionFailure,
  conversionReviewResponse,
  convertAll,
  parseConversionReview,
  type ConversionRequest,
  type ConversionResponse,
} from './review.js';

/**
 * A review carries every object of a list page the API server converts at once (a
 * `kubectl get` page is 500; an unpaged list is all of them), each up to 3 MiB.
 */
export const MAX_CONVERSION_REVIEW_BYTES = 32 * 1024 * 1024;
/** The API server waits 30 s for a conversion webhook (the CRD has no timeoutSeconds). */
const CONVERSION_TIMEOUT_MS = 30_000;

const reviewSeconds = histogram({
  name: 'annex_conversion_review_duration_seconds',
  help: 'Time to answer a ConversionReview, by conversion and result.',
  labelNames: ['conversion', 'result'],
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 1, 5],
});

/** One conversion's endpoint: the chain (src/server/app.ts) has matched its path and POST. */
export function conversionReview(
  conversion: Conversion,
  log: Logger,
  inFlight: InFlight = inFlightBytes(Infinity),
): (ctx: Koa.Context) => Promise<void> {
  const endpoint = reviewEndpoint<
    Review,
    ConversionResponse['convertedObjects'],
    ConversionResponse,
    undefined
  >(
    {
      maxBytes: MAX_CONVERSION_REVIEW_BYTES,
      defaultTimeoutMs: CONVERSION_TIMEOUT_MS,
      decode(body) {
        const request = parseConversionReview(body);
        const who = {
          conversion: conversion.name,
          uid: logField(request.uid),
          desired: logField(request.desiredAPIVersion, 128),
          objects: request.objects.length,
        };
        return { request, who };
      },
      decide: ({ request }) => convertAll(conversion, request),
      respond: ({ request }, convertedObjects) => ({
        uid: request.uid,
        convertedObjects,
        result: { status: 'Success' },
      }),
      failed({ request, who }, err) {
        // annex's own messages hold identifiers only; anyone else's, the class only.
        const ours = err instanceof ConversionFailure || err instanceof OverrunError;
        const message = ours ? err.message : `failed: ${errorFields(err).error}`;
        // A converter's own error: its class and stack frames say where it failed.
        const cause = err instanceof ConversionFailure && err.cause !== undefined ? err.cause : err;
        log.error(
          { ...who, ...errorFields(cause), ...(ours ? { why: message } : {}) },
          'conversion failed',
        );
        return {
          uid: request.uid,
          convertedObjects: [],
          result: {
            status: 'Failed',
            message: `annex conversion "${conversion.name}": ${message}`,
          },
        };
      },
      encode: (_, response) => conversionReviewResponse(response),
      done({ who }, response, ms) {
        const result = response.result.status === 'Success' ? 'success' : 'failed';
        reviewSeconds.observe({ conversion: conversion.name, result }, ms / 1000);
        log.info({ ...who, result, ms: Math.round(ms * 100) / 100 }, 'conversion review');
      },
    },
    inFlight,
  );
  return (ctx) => endpoint(ctx, undefined);
}

/** A decoded ConversionReview and its bounded identifiers for the log. */
interface Review {
  request: ConversionRequest;
  who: { conversion: string; uid: string; desired: string; objects: number };
}
