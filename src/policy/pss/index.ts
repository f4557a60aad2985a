// The Pod Security Standards as PodSecurity admission of Kubernetes v1.37 evaluates them.
export {
  checksFor,
  evaluatePodSecurity,
  MAX_MINOR,
  podSecurityMessage,
  policyMinor,
  renderViolations,
} from './registry.js';
export type { Level, PodMeta, PodSpec, PolicyVersion, Violation } from './types.js';
export { podOf, type PodOf } from './pod-of.js';
