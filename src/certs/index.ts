// Public surface of the certificates module.
export { createCa, issue } from './issue.js';
export type { CaOptions, CertAndKey, ExtKeyUsage, IssueOptions } from './issue.js';
export { generateRsaKey } from './keys.js';
export type { KeyPair } from './keys.js';
export { ensureCertificates } from './ensure.js';
export type { EnsureOptions, EnsureResult } from './ensure.js';
export { CertificateFileError, loadServingMaterial } from './load.js';
export type { ServingMaterial } from './load.js';
export { watchServingMaterial } from './reload.js';
export type { WatchOptions } from './reload.js';
export {
  chainsTo,
  describeCertificate,
  EKU_CLIENT_AUTH,
  EKU_SERVER_AUTH,
} from './describe.js';
export type { CertificateInfo } from './describe.js';
export { FILES } from './files.js';
export { assertDnsLabel, serviceDnsNames } from './names.js';
export { hasTargets, injectWithClient } from './inject.js';
export type { InjectOutcome, InjectTargets } from './inject.js';
export { formatInspectReport, inspectCertificates } from './inspect.js';
export type { InspectReport } from './inspect.js';
