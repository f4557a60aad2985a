// Which API server `annex serve` extends: kube.kubeconfig (--kubeconfig), else $KUBECONFIG,
// else the cluster annex runs in, else none (a local `npm start`). kube.context
// (--context) picks the context. Never ~/.kube/config by surprise: a demo must not quietly
// talk to whatever cluster the default file points at; $KUBECONFIG is a choice the shell
// made, so it counts, as it does for kubectl.
import { KubeClient } from './client.js';
import { resolveCredentials } from './kubeconfig.js';

export function connectKube(
  // The `kube:` section, structurally: src/config sits above the clients it configures.
  config: { kubeconfig: string; context: string; timeoutSeconds: number },
  opts: { env?: NodeJS.ProcessEnv } = {},
): KubeClient | null {
  const creds = resolveCredentials({
    kubeconfig: config.kubeconfig,
    context: config.context,
    defaultFile: false,
    ...(opts.env ? { env: opts.env } : {}),
  });
  return creds && new KubeClient(creds, { timeoutMs: config.timeoutSeconds * 1000 });
}
