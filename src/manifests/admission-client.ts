// The kube-apiserver's side of webhook client authentication: an AdmissionConfiguration
// (--admission-control-config-file) whose webhook admission plugins read a kubeconfig, and
// that kubeconfig, whose users are keyed by the webhook host the API server dials. Written
// by `annex certs admission-client` for a real cluster and by the local control plane
// (src/devcluster/control-plane.ts) for the tests, so the tests prove this rendering.

/**
 * The kubeconfig user name the API server looks up for a Service webhook: `<svc>.<ns>.svc`,
 * with `:<port>` unless the port is 443 (API servers since 1.16 require it then).
 */
export const webhookHostName = (service: string, namespace: string, port: number): string =>
  `${service}.${namespace}.svc${port === 443 ? '' : `:${port}`}`;

/** A kubeconfig with one user per host name (`*`: every webhook), holding the client certificate. */
export function webhookClientKubeconfig(
  hosts: readonly string[],
  cert: { certPem: string; keyPem: string },
): object {
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Config',
    users: hosts.map((name) => ({
      name,
      user: {
        'client-certificate-data': b64(cert.certPem),
        'client-key-data': b64(cert.keyPem),
      },
    })),
  };
}

/** The AdmissionConfiguration that gives both webhook admission plugins that kubeconfig. */
export function admissionConfiguration(kubeconfigFile: string): object {
  const plugin = (name: string) => ({
    name,
    configuration: {
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'WebhookAdmissionConfiguration',
      kubeConfigFile: kubeconfigFile,
    },
  });
  return {
    apiVersion: 'apiserver.config.k8s.io/v1',
    kind: 'AdmissionConfiguration',
    plugins: [plugin('ValidatingAdmissionWebhook'), plugin('MutatingAdmissionWebhook')],
  };
}
