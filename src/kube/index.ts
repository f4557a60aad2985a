// annex's door to the kube-apiserver: credentials, a typed client, watches.
export {
  defaultCredentials,
  fileToken,
  inCluster,
  KubeconfigError,
  loadKubeconfig,
  parseKubeconfig,
  type KubeCredentials,
  type TokenSource,
} from './kubeconfig.js';
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
