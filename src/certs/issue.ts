// X.509 certificates: node-forge builds the structure (subject, extensions, validity), and
// Node's native crypto signs it. forge's JS RSA signature costs ~60 ms per certificate on
// this class of machine against ~2 ms natively, which matters for the ≤ 200 ms budget.
import { createPrivateKey, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';
import { generateRsaKey, type KeyPair } from './keys.js';

const { pki, asn1 } = forge;

/** A certificate and its private key, both PEM. */
export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

export type ExtKeyUsage = 'serverAuth' | 'clientAuth';

export interface CaOptions {
  /** Default `annex-ca@<unix-time>`, the same shape kube's self-signed CAs use. */
  commonName?: string;
  /** Default 3650 (10 years). */
  validityDays?: number;
  /** Supply a key instead of generating one (tests, benchmarks). */
  key?: KeyPair;
}

export interface IssueOptions {
  /** The signing CA (its certificate and private key). */
  ca: CertAndKey;
  commonName: string;
  /** Subject O values; Kubernetes reads them as the groups of a client certificate. */
  organizations?: string[];
  /** Extended key usages: serverAuth for serving certs, clientAuth for client certs. */
  usages: ExtKeyUsage[];
  dnsNames?: string[];
  ipAddresses?: string[];
  /** Default 365. */
  validityDays?: number;
  key?: KeyPair;
}

/**
 * A subject attribute encoded as UTF8String. forge defaults to PrintableString, which
 * cannot hold '@', ':' or '_' (as in "annex-ca@1700000000" or "system:masters"), and Go's
 * x509 parser rejects such certificates: "invalid RDNSequence: invalid PrintableString".
 */
function rdn(name: string, value: string) {
  return { name, value, valueTagClass: asn1.Type.UTF8 as number };
}

const DAY_MS = 86_400_000;
// Backdated so that a peer whose clock runs a little behind accepts a fresh certificate.
const BACKDATE_MS = 3_600_000;

/** Self-signed CA: basicConstraints CA:true (critical), keyCertSign + cRLSign. */
export async function createCa(opts: CaOptions = {}): Promise<CertAndKey> {
  const key = opts.key ?? (await generateRsaKey());
  const name = [rdn('commonName', opts.commonName ?? `annex-ca@${Math.floor(Date.now() / 1000)}`)];
  const cert = newCertificate(key, opts.validityDays ?? 3650);
  cert.setSubject(name);
  cert.setIssuer(name);
  const ski = subjectKeyId(cert);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: ski },
  ]);
  return { certPem: signCertificate(cert, key.privateKeyPem), keyPem: key.privateKeyPem };
}

/** A leaf certificate (server, client or both) signed by `opts.ca`. */
export async function issue(opts: IssueOptions): Promise<CertAndKey> {
  if (opts.usages.length === 0) throw new Error('issue: at least one usage is required');
  const key = opts.key ?? (await generateRsaKey());
  const caCert = pki.certificateFromPem(opts.ca.certPem);
  const subject = (opts.organizations ?? []).map((o) => rdn('organizationName', o));
  subject.push(rdn('commonName', opts.commonName));

  const cert = newCertificate(key, opts.validityDays ?? 365);
  // A leaf outliving its CA would look valid to renewal checks yet fail verification.
  if (cert.validity.notAfter > caCert.validity.notAfter) {
    cert.validity.notAfter = caCert.validity.notAfter;
  }
  cert.setSubject(subject);
  cert.setIssuer(caCert.subject.attributes);
  const altNames = [
    ...(opts.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(opts.ipAddresses ?? []).map((ip) => {
      if (isIP(ip) === 0) throw new Error(`not an IP address: "${ip}"`);
      return { type: 7, ip };
    }),
  ];
  const exts: object[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    {
      name: 'extKeyUsage',
      serverAuth: opts.usages.includes('serverAuth'),
      clientAuth: opts.usages.includes('clientAuth'),
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: subjectKeyId(caCert) },
  ];
  // RFC 5280: a SAN extension, if present, must not be empty.
  if (altNames.length > 0) exts.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(exts);
  return { certPem: signCertificate(cert, opts.ca.keyPem), keyPem: key.privateKeyPem };
}

function newCertificate(key: KeyPair, validityDays: number): forge.pki.Certificate {
  if (!(validityDays > 0)) throw new Error(`validity must be a positive number of days`);
  const cert = pki.createCertificate();
  cert.publicKey = pki.publicKeyFromPem(key.publicKeyPem);
  cert.serialNumber = randomSerial();
  const now = Date.now();
  cert.validity.notBefore = new Date(now - BACKDATE_MS);
  cert.validity.notAfter = new Date(now + validityDays * DAY_MS);
  return cert;
}

/** 128 random bits as a positive, minimally encoded DER INTEGER (hex). */
function randomSerial(): string {
  const bytes = randomBytes(16);
  // Top bit clear keeps it positive; the next bit set avoids a leading zero byte.
  bytes[0] = (bytes[0]! & 0x7f) | 0x40;
  return bytes.toString('hex');
}

/** The key identifier forge writes for this certificate's public key (SHA-1 of the key). */
function subjectKeyId(cert: forge.pki.Certificate): string {
  return cert.generateSubjectKeyIdentifier().getBytes();
}

// forge exposes this at run time; its type declarations omit it.
const getTBSCertificate = (
  pki as unknown as { getTBSCertificate(c: forge.pki.Certificate): forge.asn1.Asn1 }
).getTBSCertificate;

function signCertificate(cert: forge.pki.Certificate, signerKeyPem: string): string {
  cert.signatureOid = pki.oids.sha256WithRSAEncryption!;
  cert.siginfo.algorithmOid = cert.signatureOid;
  const tbs = getTBSCertificate(cert);
  cert.tbsCertificate = tbs;
  const tbsDer = Buffer.from(asn1.toDer(tbs).getBytes(), 'binary');
  const signature = sign('sha256', tbsDer, createPrivateKey(signerKeyPem));
  cert.signature = signature.toString('binary');
  return pki.certificateToPem(cert);
}

