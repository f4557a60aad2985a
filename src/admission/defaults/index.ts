export { applyDefaults, hasDefaults } from './apply.js';
export type { ApplyDefaultsOptions } from './apply.js';
export { defaultPodTemplateSpec } from './pod.js';
export { defaultPullPolicy } from './container.js';
export { canonicalQuantity } from '../../apiserver/quantity.js';
export {
  LAST_APPLIED,
  ObjectsError,
  parseObjects,
  printObjects,
  renderObject,
  renderText,
  withLastApplied,
} from './render.js';
export type { RenderOptions } from './render.js';
export { randomSuffix, SERVICE_ACCOUNT_MOUNT_PATH } from './plugins.js';
export {
  applyServerFields,
  clusterScopedKindsOf,
  isClusterScoped,
  podQosClass,
} from './server-fields.js';
export type { ServerFieldsOptions } from './server-fields.js';
export { goJson, goYamlKeyCompare, toKubectlYaml } from './yaml.js';
export type { Json, JsonObject } from './util.js';
export { createRefusal, nameCauses } from './validate.js';
export { PLACEHOLDERS } from './placeholders.js';
