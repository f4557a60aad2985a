// The one place the request path is composed. Read it top to bottom: each middleware
// does one thing, in the order k8s.io/apiserver's filter chain does it.
import Koa from 'koa';
import type { Logger } from '../log.js';
import { statusErrors } from './errors.js';
import { health } from './health.js';
import { accessLog } from './access-log.js';
import { unreadBody } from './unread-body.js';

export interface AppParts {
  log: Logger;
  isReady: () => boolean;
  /** Feature middleware (webhooks, aggregated API), each passing on paths it does not own. */
  features: Koa.Middleware[];
}

export function createApp(parts: AppParts): Koa {
  const app = new Koa();
  // Koa's default 'error' listener prints stacks to stderr; statusErrors already logs.
  app.silent = true;
  app.use(unreadBody()); // 0. an answer sent before its body was read: discard the rest, or close
  app.use(statusErrors(parts.log)); // 1. every failure below → a Status JSON
  app.use(accessLog(parts.log)); // 2. one line per request: method, path, code, latency
  app.use(health(parts.isReady)); // 3. probes, before any authentication
  for (const f of parts.features) app.use(f); // 4. webhooks, then the aggregated API
  return app;
}
