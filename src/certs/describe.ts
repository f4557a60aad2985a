// Reading certificates back with node:crypto's X509Certificate (OpenSSL's parser), so checks
// do not depend on the library that wrote them.
import { X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';

export interface CertificateInfo {
  subject: string;
  issuer: string;
  serialNumber: string;
  dnsNames: string[];
  ipAddresses: string[];
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  /** Extended key usage OIDs (serverAuth 1.3.6.1.5.5.7.3.1, clientAuth …3.2). */
  extKeyUsages: string[];
  fingerprint256: string;
}

export const EKU_SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
export const EKU_CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';

export function describeCertificate(cert: X509Certificate): CertificateInfo {
  const dnsNames: string[] = [];
  const ipAddresses: string[] = [];
  // Format: "DNS:a, DNS:b, IP Address:127.0.0.1". Our names never contain ", ".
  for (const entry of cert.subjectAltName?.split(', ') ?? []) {
    if (entry.startsWith('DNS:')) dnsNames.push(entry.slice(4));
    else if (entry.startsWith('IP Address:')) ipAddresses.push(entry.slice(11));
  }
  return {
    subject: cert.subject.replaceAll('\n', ', '),
    issuer: cert.issuer.replaceAll('\n', ', '),
    serialNumber: cert.serialNumber,
    dnsNames,
    ipAddresses,
    notBefore: new Date(cert.validFrom),
    notAfter: new Date(cert.validTo),
    isCa: cert.ca,
    extKeyUsages: cert.keyUsage ?? [],
    fingerprint256: cert.fingerprint256,
  };
}

/** One spelling per address (IPv6 "::1" and "0:0:0:0:0:0:0:1" are the same SAN). */
export function canonicalIp(ip: string): string {
  const family = isIP(ip);
  if (family === 0) throw new Error(`not an IP address: "${ip}"`);
  // The WHATWG URL parser prints IPv6 in its RFC 5952 compressed form.
  return family === 6 ? new URL(`http://[${ip}]/`).hostname.slice(1, -1) : ip;
}

/** True when `leaf` names `ca` as issuer and carries a valid signature from its key. */
export function chainsTo(leaf: X509Certificate, ca: X509Certificate): boolean {
  return leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}
