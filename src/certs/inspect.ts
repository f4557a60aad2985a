// `annex certs inspect`: what is in a certificate folder and whether the chain holds,
// checked with OpenSSL (node:crypto) rather than with the library that wrote the files.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chainsTo, describeCertificate, type CertificateInfo } from './describe.js';
import { FILES } from './files.js';

export interface InspectReport {
  dir: string;
  ca?: CertificateInfo;
  leaf?: CertificateInfo;
  /** Empty when tls.crt chains to ca.crt, both are in their validity period and tls.key matches. */
  problems: string[];
}

export function inspectCertificates(dir: string, now = new Date()): InspectReport {
  const problems: string[] = [];
  const load = (file: string): X509Certificate | undefined => {
    const path = join(dir, file);
    try {
      return new X509Certificate(readFileSync(path));
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      problems.push(code === 'ENOENT' ? `${path}: file not found` : `${path}: not a valid certificate`);
      return undefined;
    }
  };
  const ca = load(FILES.caCert);
  const leaf = load(FILES.cert);
  const report: InspectReport = { dir, problems };
  for (const [name, cert] of [
    [FILES.caCert, ca],
    [FILES.cert, leaf],
  ] as const) {
    if (!cert) continue;
    const info = describeCertificate(cert);
    if (now < info.notBefore) problems.push(`${name} is not valid before ${info.notBefore.toISOString()}`);
    if (now > info.notAfter) problems.push(`${name} expired ${info.notAfter.toISOString()}`);
    if (name === FILES.caCert) report.ca = info;
    else report.leaf = info;
  }
  if (ca && !ca.ca) problems.push(`${FILES.caCert} is not a CA certificate (basicConstraints CA:false)`);
  if (ca && leaf && !chainsTo(leaf, ca)) problems.push(`${FILES.cert} is not signed by ${FILES.caCert}`);
  if (leaf) {
    try {
      const key = createPrivateKey(readFileSync(join(dir, FILES.key)));
      if (!leaf.checkPrivateKey(key)) problems.push(`${FILES.key} does not match ${FILES.cert}`);
    } catch {
      problems.push(`${join(dir, FILES.key)}: missing or not a valid private key`);
    }
  }
  return report;
}

export function formatInspectReport(r: InspectReport, now = new Date()): string {
  const lines: string[] = [];
  const section = (file: string, info: CertificateInfo | undefined) => {
    if (!info) return;
    const daysLeft = Math.floor((info.notAfter.getTime() - now.getTime()) / 86_400_000);
    lines.push(`${join(r.dir, file)}:`);
    lines.push(`  subject:    ${info.subject}`);
    lines.push(`  issuer:     ${info.issuer}`);
    lines.push(`  serial:     ${info.serialNumber}`);
    if (info.dnsNames.length + info.ipAddresses.length > 0) {
      lines.push(`  SANs:       ${[...info.dnsNames, ...info.ipAddresses].join(', ')}`);
    }
    lines.push(`  CA:         ${info.isCa ? 'yes' : 'no'}`);
    lines.push(`  notBefore:  ${info.notBefore.toISOString()}`);
    lines.push(`  notAfter:   ${info.notAfter.toISOString()} (${daysLeft} days left)`);
    lines.push(`  sha256:     ${info.fingerprint256}`);
  };
  section(FILES.caCert, r.ca);
  section(FILES.cert, r.leaf);
  if (r.problems.length === 0) lines.push(`chain: OK (${FILES.cert} verifies against ${FILES.caCert})`);
  else for (const p of r.problems) lines.push(`problem: ${p}`);
  return lines.join('\n');
}
