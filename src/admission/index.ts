// The built-in admission features, each a plain user of the Feature contract.
import type { Config } from '../config/load.js';
import type { Feature } from '../core/feature.js';
import { defaultsWebhook } from './webhooks/defaults.js';
import { namesWebhook } from './webhooks/names.js';

export const namesFeature = (): Feature => ({ name: 'names', webhooks: [namesWebhook()] });

export const defaultsFeature = (settings: Config['admission']['defaults']): Feature => ({
  name: 'defaults',
  webhooks: [defaultsWebhook(settings)],
});
