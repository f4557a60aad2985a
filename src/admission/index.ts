// The admission feature as the server mounts it: the enabled webhooks behind one middleware.
import type Koa from 'koa';
import type { Config } from '../config/load.js';
import type { Logger } from '../log.js';
import { admissionWebhooks } from './server.js';
import type { Webhook } from './verdict.js';
import { defaultsWebhook } from './webhooks/defaults.js';
import { namesWebhook } from './webhooks/names.js';

export function admission(config: Config['admission'], log: Logger): Koa.Middleware {
  const hooks: Webhook[] = [];
  if (config.names.enabled) hooks.push(namesWebhook());
  if (config.defaults.enabled) hooks.push(defaultsWebhook(config.defaults));
  return admissionWebhooks(hooks, log, { maxInFlightBytes: config.maxInFlightBytes });
}
