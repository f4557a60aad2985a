import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EKU_CLIENT_AUTH, EKU_SERVER_AUTH } from './describe.js';
import { createCa, issue, type CertAndKey } from './issue.js';
import { serviceDnsNames } from './names.js';

const run = promisify(execFile);
const SVC = 'annex';
const NS = 'annex-system';

let dir: string;
let ca: CertAndKey;
let leaf: CertAndKey;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'annex-issue-'));
  ca = await createCa();
  leaf = await issue({
    ca,
    commonName: `${SVC}.${NS}.svc`,
    usages: ['serverAuth'],
    dnsNames: [...serviceDnsNames(SVC, NS), 'localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
  });
  await writeFile(join(dir, 'ca.crt'), ca.certPem);
  await writeFile(join(dir, 'tls.crt'), leaf.certPem);
});

afterAll(() => rm(dir, { recursive: true, force: true }));

describe('createCa / issue', () => {
  it('passes openssl verify -x509_strict', async () => {
    const { stdout } = await run('openssl', [
      'verify',
      '-x509_strict',
      '-CAfile',
      join(dir, 'ca.crt'),
      join(dir, 'tls.crt'),
    ]);
    expect(stdout.trim()).toBe(`${join(dir, 'tls.crt')}: OK`);
  });

  it('writes the CA extensions OpenSSL expects of a CA', async () => {
    const { stdout } = await run('openssl', ['x509', '-in', join(dir, 'ca.crt'), '-noout', '-text']);
    expect(stdout).toMatch(/Basic Constraints: critical\s+CA:TRUE/);
    expect(stdout).toMatch(/Key Usage: critical\s+.*Certificate Sign, CRL Sign/);
    expect(stdout).toMatch(/Subject: CN = annex-ca@\d{10}/);
    expect(stdout).toContain('Subject Key Identifier');
  });

  it('gives the leaf SANs, serverAuth, key ids and a backdated notBefore', async () => {
    const x = new X509Certificate(leaf.certPem);
    const caX = new X509Certificate(ca.certPem);
    expect(x.subjectAltName).toBe(
      'DNS:annex, DNS:annex.annex-system, DNS:annex.annex-system.svc, ' +
        'DNS:annex.annex-system.svc.cluster.local, DNS:localhost, ' +
        'IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1',
    );
    expect(x.keyUsage).toEqual([EKU_SERVER_AUTH]);
    expect(x.ca).toBe(false);
    expect(x.issuer).toBe(caX.subject);
    expect(x.subject).toBe('CN=annex.annex-system.svc');
    const ageMs = Date.now() - new Date(x.validFrom).getTime();
    expect(ageMs).toBeGreaterThan(59 * 60_000);
    const lifeDays = (new Date(x.validTo).getTime() - Date.now()) / 86_400_000;
    expect(lifeDays).toBeGreaterThan(364);
    expect(lifeDays).toBeLessThanOrEqual(365);
    const { stdout } = await run('openssl', ['x509', '-in', join(dir, 'tls.crt'), '-noout', '-text']);
    expect(stdout).toMatch(/Key Usage: critical\s+Digital Signature, Key Encipherment/);
    // The leaf's authority key id is the CA's subject key id.
    const caText = (await run('openssl', ['x509', '-in', join(dir, 'ca.crt'), '-noout', '-text'])).stdout;
    const caSki = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(caText)?.[1];
    expect(caSki).toBeDefined();
    expect(stdout).toMatch(new RegExp(`Authority Key Identifier:\\s+(keyid:)?${caSki}`));
  });

  it('uses random positive serials of at least 64 bits', async () => {
    const other = await createCa();
    for (const pem of [ca.certPem, leaf.certPem, other.certPem]) {
      const serial = new X509Certificate(pem).serialNumber;
      expect(serial.length).toBeGreaterThanOrEqual(16);
      expect(parseInt(serial.slice(0, 2), 16)).toBeLessThan(0x80);
    }
    const serials = [ca.certPem, leaf.certPem, other.certPem].map(
      (p) => new X509Certificate(p).serialNumber,
    );
    expect(new Set(serials).size).toBe(3);
  });

  it('issues client certificates with CN, O groups and clientAuth', async () => {
    const client = await issue({
      ca,
      commonName: 'admin',
      organizations: ['system:masters'],
      usages: ['clientAuth'],
    });
    const x = new X509Certificate(client.certPem);
    expect(x.subject.split('\n')).toEqual(['O=system:masters', 'CN=admin']);
    expect(x.keyUsage).toEqual([EKU_CLIENT_AUTH]);
    expect(x.subjectAltName).toBeUndefined();
    expect(x.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
  });

  it('honours validityDays, caps the leaf at the CA expiry, rejects a non-positive validity', async () => {
    const short = await issue({ ca, commonName: 'x', usages: ['serverAuth'], validityDays: 2 });
    const days = (new Date(new X509Certificate(short.certPem).validTo).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(1.9);
    expect(days).toBeLessThanOrEqual(2);
    const shortCa = await createCa({ validityDays: 3 });
    const capped = await issue({ ca: shortCa, commonName: 'x', usages: ['serverAuth'] });
    expect(new X509Certificate(capped.certPem).validTo).toBe(new X509Certificate(shortCa.certPem).validTo);
    await expect(issue({ ca, commonName: 'x', usages: ['serverAuth'], validityDays: 0 })).rejects.toThrow(
      /validity/,
    );
  });
});

describe('a Node TLS client trusting only ca.crt', () => {
  let server: Server;
  let port: number;

  beforeAll(async () => {
    server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => res.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const handshake = (servername: string) =>
    new Promise<string>((resolve, reject) => {
      const s = connect({ host: '127.0.0.1', port, servername, ca: ca.certPem }, () => {
        const fp = s.getPeerCertificate().fingerprint256;
        s.end();
        resolve(fp);
      });
      s.on('error', reject);
    });

  it('verifies servername <svc>.<ns>.svc', async () => {
    await expect(handshake('annex.annex-system.svc')).resolves.toBe(
      new X509Certificate(leaf.certPem).fingerprint256,
    );
  });

  it('rejects a name outside the SANs', async () => {
    await expect(handshake('other.annex-system.svc')).rejects.toMatchObject({
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
  });

  it('rejects the certificate when the client trusts another CA', async () => {
    const otherCa = await createCa();
    const p = new Promise<void>((resolve, reject) => {
      const s = connect(
        { host: '127.0.0.1', port, servername: 'annex.annex-system.svc', ca: otherCa.certPem },
        () => {
          s.end();
          resolve();
        },
      );
      s.on('error', reject);
    });
    await expect(p).rejects.toMatchObject({ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' });
  });
});
