// The one request chain (createApp, src/server/app.ts) for the servers' unit tests, with
// nothing declared but what a test passes: no API server (loopback trusted), no groups,
// no readiness checks, no bound on review bytes unless given.
import type Koa from 'koa';
import { createLogger } from '../../src/log.js';
import { createApp, type AppParts } from '../../src/server/app.js';

export function appOf(parts: Partial<AppParts>): Koa {
  return createApp({
    log: createLogger('silent'),
    readiness: () => [],
    webhooks: [],
    groups: [],
    auth: null,
    trustLoopback: true,
    stopWatches: new AbortController().signal,
    maxReviewBytesInFlight: Infinity,
    ...parts,
  });
}
