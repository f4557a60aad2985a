// `annex certs admission-client`: what the kube-apiserver needs to present a client
// certificate to annex's webhooks, and what annex needs to check it (admission.clientCA):
// a CA (kept when it exists, so the ConfigMap stays valid), a client certificate from it,
// the kubeconfig + AdmissionConfiguration for the API server's host, and the optional
// ConfigMap `annex-admission-client-ca` that manifests/deployment.yaml mounts.
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { createCa, issue, type CertAndKey } from '../certs/issue.js';
import { ensureDir, readOptional, writeFileAtomic } from '../certs/files.js';
import { assertDnsLabel } from '../certs/names.js';
import {
  admissionConfiguration,
  webhookClientKubeconfig,
  webhookHostName,
} from '../manifests/admission-client.js';
import { days } from './certs.js';
import { UserError } from '../errors.js';
import { parsePort } from './serve.js';

export interface AdmissionClientFlags {
  out: string;
  service: string;
  namespace: string;
  port: number;
  /** Where the files will be on the API server's host (the AdmissionConfiguration names it). */
  nodeDir: string;
  validityDays: number;
}

/** The ConfigMap manifests/deployment.yaml mounts (optional) at admission.clientCA's folder. */
export const CLIENT_CA_CONFIGMAP = 'annex-admission-client-ca';

export function register(program: Command): void {
  const certs = program.commands.find((c) => c.name() === 'certs');
  if (!certs) throw new Error('register `certs` before `certs admission-client`');
  certs
    .command('admission-client')
    .description(
      "a client certificate for the kube-apiserver's calls to annex's webhooks: CA, certificate, its kubeconfig + AdmissionConfiguration, and annex's ConfigMap",
    )
    .option('--out <dir>', 'output folder', 'admission-client')
    .option('--service <name>', "annex's Service", 'annex')
    .option('--namespace <ns>', "annex's namespace", 'annex-system')
    .option('--port <port>', "the Service's port", parsePort, 8443)
    .option(
      '--node-dir <dir>',
      "where the files will be on the API server's host",
      '/var/lib/minikube/certs/annex',
    )
    .option(
      '--validity-days <days>',
      'client certificate lifetime',
      days('--validity-days', 1),
      365,
    )
    .action(async (o: AdmissionClientFlags) => {
      const lines = await admissionClient(o);
      process.stderr.write(`${lines.join('\n')}\n`);
    });
}

/** Writes the files; returns what to do with them, one line each. */
export async function admissionClient(o: AdmissionClientFlags): Promise<string[]> {
  const file = (name: string) => join(o.out, name);
  const host = webhookHostName(o.service, o.namespace, o.port);
  assertDnsLabel(o.service, '--service');
  assertDnsLabel(o.namespace, '--namespace');
  await ensureDir(o.out);
  const ca = await existingCa(file('ca.crt'), file('ca.key'));
  const caPair = ca ?? (await createCa({ commonName: `annex-admission-client-ca@${epoch()}` }));
  const client = await issue({
    ca: caPair,
    commonName: 'kube-apiserver-admission-client',
    usages: ['clientAuth'],
    validityDays: o.validityDays,
  });
  const kubeconfig = 'admission-kubeconfig.yaml';
  const writes: [string, string, number][] = [
    ['ca.crt', caPair.certPem, 0o644],
    ['ca.key', caPair.keyPem, 0o600],
    ['client.crt', client.certPem, 0o644],
    ['client.key', client.keyPem, 0o600],
    [kubeconfig, stringify(webhookClientKubeconfig([host], client)), 0o600],
    [
      'admission-config.yaml',
      stringify(admissionConfiguration(`${o.nodeDir}/${kubeconfig}`)),
      0o644,
    ],
    ['configmap.yaml', stringify(configMap(o.namespace, caPair.certPem)), 0o644],
  ];
  for (const [name, data, mode] of writes) await writeFileAtomic(file(name), data, mode);
  return [
    `${ca ? 'reused' : 'issued'} CA ${file('ca.crt')}; issued client certificate for host ${host}`,
    `on the API server's host: ${file(kubeconfig)} and ${file('admission-config.yaml')} in ${o.nodeDir}/, then --admission-control-config-file=${o.nodeDir}/admission-config.yaml`,
    `for annex: kubectl apply -f ${file('configmap.yaml')}`,
  ];
}

/** The CA in `out` when both files are there and the certificate parses; else none. */
async function existingCa(certFile: string, keyFile: string): Promise<CertAndKey | undefined> {
  const [certPem, keyPem] = [await readOptional(certFile), await readOptional(keyFile)];
  if (certPem === undefined || keyPem === undefined) return undefined;
  try {
    new X509Certificate(certPem);
  } catch {
    throw new UserError(`${certFile}: not a PEM certificate (remove it to issue a new CA)`);
  }
  return { certPem, keyPem };
}

function configMap(namespace: string, caPem: string): object {
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: CLIENT_CA_CONFIGMAP,
      namespace,
      // So `annex uninstall` removes it with the rest.
      labels: { 'app.kubernetes.io/name': 'annex', 'app.kubernetes.io/part-of': 'annex' },
    },
    data: { 'ca.crt': caPem },
  };
}

const epoch = () => Math.floor(Date.now() / 1000);
