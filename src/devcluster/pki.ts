// The control plane's own PKI, made with openssl (an independent tool: the API server's
// trust in annex's certificates is tested elsewhere; here we only need a working cluster).
// Four roots as kubeadm lays them out: serving CA, client CA, front-proxy CA, SA key pair.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function ca(dir: string, name: string, cn: string): void {
  openssl(
    [
      'req',
      '-x509',
      ...EC,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '2',
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

function leaf(dir: string, name: string, signer: string, subject: string, ext: string[]): void {
  const extFile = join(dir, `${name}.ext`);
  writeFileSync(extFile, ext.join('\n') + '\n');
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
      '-days',
      '2',
      '-out',
      `${name}.crt`,
      '-extfile',
      extFile,
    ],
    dir,
  );
}

const CLIENT = ['keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth'];

export interface Pki {
  dir: string;
  servingCa: string;
  clientCa: string;
  frontProxyCa: string;
}

export function makePki(dir: string): Pki {
  ca(dir, 'serving-ca', 'annex-test-serving-ca');
  ca(dir, 'client-ca', 'annex-test-client-ca');
  ca(dir, 'front-proxy-ca', 'annex-test-front-proxy-ca');
  leaf(dir, 'apiserver', 'serving-ca', '/CN=kube-apiserver', [
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1',
  ]);
  leaf(dir, 'admin', 'client-ca', '/O=system:masters/CN=annex-admin', CLIENT);
  leaf(dir, 'user', 'client-ca', '/CN=jane', CLIENT);
  leaf(dir, 'front-proxy-client', 'front-proxy-ca', '/CN=front-proxy-client', CLIENT);
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
