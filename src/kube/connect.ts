// Which API server annex extends: the kubeconfig named in the configuration, else the
// cluster annex runs in, else none (a local `npm start`). Never ~/.kube/config by
// surprise: a demo must not quietly talk to whatever cluster the shell points at.
import { existsSync } from 'node:fs';
import type { Config } from '../config/load.js';
import { KubeClient } from './client.js';
import { inCluster, loadKubeconfig } from './kubeconfig.js';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export function connectKube(config: Config['kube']): KubeClient | null {
  if (config.kubeconfig) return new KubeClient(loadKubeconfig(config.kubeconfig));
  if (process.env.KUBERNETES_SERVICE_HOST && existsSync(`${SA_DIR}/token`)) {
    return new KubeClient(inCluster());
  }
  return null;
}
