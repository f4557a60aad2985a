// The built-in admission features, each a plain user of the Feature contract.
import type { Feature } from '../core/feature.js';
import type { DefaultsConfig } from './config.js';
import { defaultsWebhook } from './webhooks/defaults.js';
import { namesWebhook } from './webhooks/names.js';

export const namesFeature = (): Feature => ({ name: 'names', webhooks: [namesWebhook()] });

// Built from its section (`admission.defaults`, ./config.ts): the webhook is declared with it.
export const defaultsFeature = (settings: DefaultsConfig): Feature => ({
  name: 'defaults',
  webhooks: [defaultsWebhook(settings)],
});
