import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { verifyClientChain } from '../apiserver/auth/x509.js';
import { loadConfig } from '../config/load.js';
import {
  admissionClient,
  CLIENT_CA_CONFIGMAP,
  type AdmissionClientFlags,
} from './admission-client.js';
import { UserError } from '../errors.js';

const repo = join(import.meta.dirname, '..', '..');
const out = mkdtempSync(join(tmpdir(), 'annex-admission-client-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

const flags: AdmissionClientFlags = {
  out,
  service: 'annex',
  namespace: 'annex-system',
  port: 8443,
  nodeDir: '/var/lib/minikube/certs/annex',
  validityDays: 365,
};
const read = (f: string) => readFileSync(join(out, f), 'utf8');
const yaml = (f: string) => parse(read(f));

describe('annex certs admission-client', () => {
  it("writes a client certificate from its CA, the API server's kubeconfig and AdmissionConfiguration, and annex's ConfigMap", async () => {
    const lines = await admissionClient(flags);
    expect(lines[0]).toMatch(
      /^issued CA .*; issued client certificate for host annex\.annex-system\.svc:8443$/,
    );
    const ca = new X509Certificate(read('ca.crt'));
    const client = new X509Certificate(read('client.crt'));
    expect(verifyClientChain([client], [ca])).toMatchObject({ ok: true });
    for (const key of ['ca.key', 'client.key', 'admission-kubeconfig.yaml'])
      expect(statSync(join(out, key)).mode & 0o777).toBe(0o600);

    // Users are keyed by the host the API server dials: the Service's DNS name and its port.
    const kubeconfig = yaml('admission-kubeconfig.yaml');
    expect(kubeconfig.users.map((u: any) => u.name)).toEqual(['annex.annex-system.svc:8443']);
    const user = kubeconfig.users[0].user;
    expect(Buffer.from(user['client-certificate-data'], 'base64').toString()).toBe(
      read('client.crt'),
    );
    expect(Buffer.from(user['client-key-data'], 'base64').toString()).toBe(read('client.key'));

    expect(yaml('admission-config.yaml')).toEqual({
      apiVersion: 'apiserver.config.k8s.io/v1',
      kind: 'AdmissionConfiguration',
      plugins: ['ValidatingAdmissionWebhook', 'MutatingAdmissionWebhook'].map((name) => ({
        name,
        configuration: {
          apiVersion: 'apiserver.config.k8s.io/v1',
          kind: 'WebhookAdmissionConfiguration',
          kubeConfigFile: '/var/lib/minikube/certs/annex/admission-kubeconfig.yaml',
        },
      })),
    });
    expect(yaml('configmap.yaml')).toMatchObject({
      kind: 'ConfigMap',
      metadata: { name: CLIENT_CA_CONFIGMAP, namespace: 'annex-system' },
      data: { 'ca.crt': read('ca.crt') },
    });
  });

  it('run again, keeps the CA (the ConfigMap stays valid) and issues a new client certificate', async () => {
    const [ca, client] = [read('ca.crt'), read('client.crt')];
    const lines = await admissionClient({ ...flags, port: 443 });
    expect(lines[0]).toMatch(/^reused CA .* for host annex\.annex-system\.svc$/);
    expect(read('ca.crt')).toBe(ca);
    expect(read('client.crt')).not.toBe(client);
  });

  it('a bad flag is one line naming it', async () => {
    await expect(admissionClient({ ...flags, service: 'Annex' })).rejects.toThrow(UserError);
    await expect(admissionClient({ ...flags, service: 'Annex' })).rejects.toThrow(
      /^--service must be/,
    );
  });

  it("matches the shipped install: deployment.yaml mounts that ConfigMap, optional, where config.yaml's admission.clientCA points", () => {
    const config = loadConfig({ file: join(repo, 'manifests', 'config.yaml') });
    const deploy = parseAllDocuments(
      readFileSync(join(repo, 'manifests', 'deployment.yaml'), 'utf8'),
    )[0]!.toJSON();
    const pod = deploy.spec.template.spec;
    const volume = pod.volumes.find((v: any) => v.configMap?.name === CLIENT_CA_CONFIGMAP);
    expect(volume.configMap.optional).toBe(true);
    const mount = pod.containers[0].volumeMounts.find((m: any) => m.name === volume.name);
    expect(mount.mountPath).toBe(dirname(config.admission.clientCA));
    expect(posix.basename(config.admission.clientCA)).toBe('ca.crt');
    expect(config.admission.requireClientCert).toBe(false);
  });
});
