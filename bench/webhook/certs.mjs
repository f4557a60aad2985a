// One ECDSA P-256 CA and serving certificate (SANs 127.0.0.1, localhost) for every server
// under test, so all of them pay the same TLS costs: made with the openssl command, as
// annex's own generator makes RSA keys only.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export async function makeCerts(dir) {
  mkdirSync(dir, { recursive: true });
  const f = (n) => join(dir, n);
  const ssl = (...args) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  ssl(
    'req',
    '-x509',
    ...ec,
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
    '-subj',
    '/CN=annex-bench-ca',
    '-days',
    '7',
  );
  ssl('req', ...ec, '-keyout', f('tls.key'), '-out', f('tls.csr'), '-subj', '/CN=localhost');
  writeFileSync(
    f('ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n',
  );
  ssl(
    'x509',
    '-req',
    '-in',
    f('tls.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-out',
    f('tls.crt'),
    '-days',
    '7',
    '-extfile',
    f('ext'),
  );
  const caPem = readFileSync(f('ca.crt'), 'utf8');
  return {
    dir,
    cert: f('tls.crt'),
    key: f('tls.key'),
    caFile: f('ca.crt'),
    ca: Buffer.from(caPem),
    caPem,
  };
}
