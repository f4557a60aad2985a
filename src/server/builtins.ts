// The features annex ships, switched on by configuration. The server knows nothing more
// about them than about a user's own: each is a Feature (src/core/feature.ts).
import { defaultsFeature, namesFeature } from '../admission/index.js';
import type { Config } from '../config/load.js';
import { metricsFeature } from '../metrics/feature.js';
import { policyFeature } from '../policy/feature.js';
import { scalingFeature } from '../scaling/feature.js';
import type { Feature } from '../core/feature.js';

export function builtinFeatures(config: Config): Feature[] {
  const features: Feature[] = [];
  if (config.admission.names.enabled) features.push(namesFeature());
  if (config.admission.defaults.enabled) features.push(defaultsFeature(config.admission.defaults));
  if (config.metrics.enabled) features.push(metricsFeature(config.metrics));
  if (config.policy.enabled) features.push(policyFeature(config));
  if (config.scaling.enabled) features.push(scalingFeature(config.scaling));
  return features;
}
