// AdmissionPolicies compiled to ValidatingAdmissionPolicy: see compile.ts for the subset.
export {
  bindingName,
  celStatus,
  compileToCel,
  vapName,
  POLICY_LABEL,
  type CelObjects,
  type CelOptions,
  type CelStatus,
} from './compile.js';
export { celObjects, recordsAudit, syncCel, webhookPolicies } from './apply.js';
export { explainCel, type RuleEngine } from './explain.js';
