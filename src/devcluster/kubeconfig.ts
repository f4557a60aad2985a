// Kubeconfigs with embedded credentials, written as kubectl itself would.
import { readFileSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';

const b64 = (file: string) => readFileSync(file).toString('base64');

export function writeKubeconfig(
  file: string,
  o: {
    server: string;
    caFile: string;
    user: string;
    certFile?: string;
    keyFile?: string;
    token?: string;
  },
): void {
  const user: Record<string, string> = {};
  if (o.certFile && o.keyFile) {
    user['client-certificate-data'] = b64(o.certFile);
    user['client-key-data'] = b64(o.keyFile);
  }
  if (o.token) user.token = o.token;
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'annex-test',
        cluster: { server: o.server, 'certificate-authority-data': b64(o.caFile) },
      },
    ],
    users: [{ name: o.user, user }],
    contexts: [{ name: o.user, context: { cluster: 'annex-test', user: o.user } }],
    'current-context': o.user,
  };
  writeFileSync(file, stringify(doc), { mode: 0o600 });
}
