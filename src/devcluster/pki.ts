// Throwaway PKI made with openssl (an independent tool: the API server's trust in annex's
// certificates is tested elsewhere; here we only need working keys and certificates).
// makePki lays out the control plane's four roots as kubeadm does: serving CA, client CA,
// front-proxy CA, SA key pair. The small helpers are exported for tests that need their own.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

// Every key is EC P-256, unencrypted; every certificate lives two days.
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
const DAYS = ['-days', '2'];

/** Extensions of a TLS client leaf. */
export const CLIENT_EXT = ['keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth'];
/** Extensions of a TLS server leaf; add a `subjectAltName=…` line. */
export const SERVER_EXT = ['keyUsage=critical,digitalSignature', 'extendedKeyUsage=serverAuth'];

/** Writes `<dir>/<name>.key` and a self-signed root `<dir>/<name>.crt` with subject CN=cn. */
export function opensslCa(dir: string, name: string, cn: string): void {
  openssl(
    [
      'req',
      '-x509',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      ...DAYS,
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
}

/**
 * Writes `<dir>/<name>.key` and `<dir>/<name>.crt` signed by `<dir>/<signer>.{crt,key}`.
 * `subject` is openssl's form (`/O=…/CN=…`); `ext` is one extension per line, and only
 * these extensions end up in the certificate.
 */
export function opensslLeaf(
  dir: string,
  name: string,
  signer: string,
  subject: string,
  ext: string[],
): void {
  writeFileSync(join(dir, `${name}.ext`), ext.join('\n') + '\n');
  openssl(
    ['req', '-new', ...EC, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject],
    dir,
  );
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${signer}.crt`,
      '-CAkey',
      `${signer}.key`,
      '-CAcreateserial',
      ...DAYS,
      '-out',
      `${name}.crt`,
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
}

/**
 * Writes a self-signed `<dir>/<name>.crt` (CN=cn, with a subjectAltName when `sans` is
 * given, e.g. `['IP:127.0.0.1']`) and its `<dir>/<name>.key`; returns both as PEM text.
 */
export function opensslSelfSigned(
  dir: string,
  name: string,
  opts: { cn: string; sans?: string[] },
): { cert: string; key: string } {
  const san = opts.sans?.length ? ['-addext', `subjectAltName=${opts.sans.join(',')}`] : [];
  openssl(
    [
      'req',
      '-x509',
      ...EC,
      ...DAYS,
      '-subj',
      `/CN=${opts.cn}`,
      ...san,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
    ],
    dir,
  );
  return {
    cert: readFileSync(join(dir, `${name}.crt`), 'utf8'),
    key: readFileSync(join(dir, `${name}.key`), 'utf8'),
  };
}

export interface Pki {
  dir: string;
  servingCa: string;
  clientCa: string;
  frontProxyCa: string;
}

export function makePki(dir: string): Pki {
  opensslCa(dir, 'serving-ca', 'annex-test-serving-ca');
  opensslCa(dir, 'client-ca', 'annex-test-client-ca');
  opensslCa(dir, 'front-proxy-ca', 'annex-test-front-proxy-ca');
  opensslLeaf(dir, 'apiserver', 'serving-ca', '/CN=kube-apiserver', [
    ...SERVER_EXT,
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1',
  ]);
  opensslLeaf(dir, 'admin', 'client-ca', '/O=system:masters/CN=annex-admin', CLIENT_EXT);
  opensslLeaf(dir, 'user', 'client-ca', '/CN=jane', CLIENT_EXT);
  opensslLeaf(dir, 'front-proxy-client', 'front-proxy-ca', '/CN=front-proxy-client', CLIENT_EXT);
  // What kube-apiserver presents to admission webhooks (control-plane.ts, AdmissionConfiguration).
  opensslCa(dir, 'webhook-client-ca', 'annex-test-webhook-client-ca');
  opensslLeaf(
    dir,
    'webhook-client',
    'webhook-client-ca',
    '/CN=kube-apiserver-webhook-client',
    CLIENT_EXT,
  );
  openssl(
    ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'sa.key'],
    dir,
  );
  openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
  return {
    dir,
    servingCa: join(dir, 'serving-ca.crt'),
    clientCa: join(dir, 'client-ca.crt'),
    frontProxyCa: join(dir, 'front-proxy-ca.crt'),
  };
}
