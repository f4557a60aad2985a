// The features annex ships, switched on by configuration. The server knows nothing more
// about them than about a user's own: each is a Feature (src/core/feature.ts), built from
// its own configuration section, which it declares beside its code (<feature>/config.ts) and
// which src/config/schema.ts places at a top-level key reserved for it. `enabled` is the one
// key of a section the server reads: a user's feature is switched on by being listed.
import { defaultsFeature, namesFeature } from '../admission/index.js';
import { loadServingMaterial } from '../certs/index.js';
import type { Config } from '../config/load.js';
import { metricsFeature } from '../metrics/feature.js';
import { policyFeature } from '../policy/feature.js';
import { scalingFeature } from '../scaling/feature.js';
import type { Feature } from '../core/feature.js';

export function builtinFeatures(config: Config): Feature[] {
  const { admission, metrics, policy, scaling, tls } = config;
  const features: Feature[] = [];
  if (admission.names.enabled) features.push(namesFeature());
  if (admission.defaults.enabled) features.push(defaultsFeature(admission.defaults));
  if (metrics.enabled) features.push(metricsFeature(metrics));
  if (policy.enabled) {
    const at = { service: tls.service, namespace: tls.namespace, port: config.server.port };
    features.push(policyFeature(policy, { ...at, serving: () => loadServingMaterial(tls.dir) }));
  }
  if (scaling.enabled) features.push(scalingFeature(scaling));
  return features;
}
