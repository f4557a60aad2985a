// `annex serve --load FILE` and the `features:` config key: a user's module of features,
// imported as it is. A module exports its features as default (one or a list) or as
// `features`; a bare webhook or conversion counts as a feature of its own.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../config/load.js';
import type { Webhook } from '../admission/webhook.js';
import type { Conversion } from '../conversion/declare.js';
import type { Feature } from './feature.js';

const isWebhook = (v: object): v is Webhook =>
  typeof (v as Webhook).admit === 'function' && Array.isArray((v as Webhook).registrations);

const isConversion = (v: object): v is Conversion =>
  typeof (v as Conversion).crdName === 'string' && typeof (v as Conversion).converters === 'object';

export async function loadFeatureModules(paths: readonly string[]): Promise<Feature[]> {
  const features: Feature[] = [];
  for (const path of paths) {
    const file = resolve(path);
    if (!existsSync(file)) throw new ConfigError(`feature module ${path}: no such file`);
    let mod: { default?: unknown; features?: unknown };
    try {
      mod = (await import(pathToFileURL(file).href)) as typeof mod;
    } catch (e) {
      throw new ConfigError(`feature module ${path} failed to load: ${(e as Error).message}`);
    }
    const exported = mod.default ?? mod.features;
    const list = Array.isArray(exported) ? exported : [exported];
    for (const f of list) {
      if (typeof f !== 'object' || f === null || typeof (f as Feature).name !== 'string') {
        throw new ConfigError(
          `feature module ${path} must export its features (or webhooks) as default or as "features"`,
        );
      }
      // A module may export a bare webhook or conversion: it is then a feature of its own.
      features.push(
        isWebhook(f)
          ? { name: `${f.type}-${f.name}`, webhooks: [f] }
          : isConversion(f)
            ? { name: `convert-${f.name}`, conversions: [f] }
            : (f as Feature),
      );
    }
  }
  return features;
}
