// annex's door to the kube-apiserver: credentials, a typed client, watches.
export {
  credentialsFor,
  defaultCredentials,
  inCluster,
  loadKubeconfig,
  loadKubeconfigList,
  mergeKubeconfigs,
  parseKubeconfig,
  resolveCredentials,
  type KubeCredentials,
  type MergedKubeconfig,
  type ResolveOptions,
} from './kubeconfig.js';
export { fileToken, type FileToken } from './token.js';
export {
  staticToken,
  tokenFileSource,
  type Credential,
  type CredentialSource,
} from './credentials.js';
export {
  execCredentialSource,
  parseExecConfig,
  parseExecCredential,
  type ExecConfig,
} from './exec.js';
export { isKubeError, KubeconfigError, KubeUnreachableError } from './errors.js';
export {
  KubeApiError,
  KubeClient,
  type KubeList,
  type KubeStatus,
  type PatchType,
  type Query,
  type RequestOptions,
  type WatchEvent,
  type WatchOptions,
} from './client.js';
