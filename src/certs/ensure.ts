// Idempotent certificate setup: reuse what is on disk while it is still right, re-issue only
// what is wrong. Keeping the CA (and its key) stable keeps every caBundle already
// registered in the cluster valid across restarts and leaf renewals.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { canonicalIp, chainsTo, describeCertificate, EKU_SERVER_AUTH } from './describe.js';
import type { CertificateInfo } from './describe.js';
import { ensureDir, FILES, readOptional, writeFileAtomic } from './files.js';
import { createCa, issue, type CertAndKey } from './issue.js';
import { generateRsaKey } from './keys.js';
import {
  assertDnsLabel,
  assertDnsName,
  assertIp,
  normalizeNames,
  serviceDnsNames,
} from './names.js';

export interface EnsureOptions {
  dir: string;
  service: string;
  namespace: string;
  /** Extra DNS SANs. Default `['localhost']` (local runs). */
  dnsNames?: string[];
  /** IP SANs. Default `['127.0.0.1']`. */
  ipAddresses?: string[];
  /** Renew a certificate that expires within this many days. Default 30. */
  renewBeforeDays?: number;
  /** Default 3650. */
  caValidityDays?: number;
  /** Default 365. */
  leafValidityDays?: number;
}

export interface EnsureResult {
  /** base64 of the CA PEM: the value for APIService/webhook `caBundle`. */
  caBundle: string;
  caPem: string;
  certPem: string;
  keyPem: string;
  issuedCa: boolean;
  issuedLeaf: boolean;
  /** Why the CA / leaf was issued; undefined when reused. */
  caReason?: string;
  leafReason?: string;
  ca: CertificateInfo;
  leaf: CertificateInfo;
}

const DAY_MS = 86_400_000;

export async function ensureCertificates(opts: EnsureOptions): Promise<EnsureResult> {
  assertDnsLabel(opts.service, 'tls.service');
  assertDnsLabel(opts.namespace, 'tls.namespace');
  const extraDns = opts.dnsNames ?? ['localhost'];
  const ips = opts.ipAddresses ?? ['127.0.0.1'];
  for (const d of extraDns) assertDnsName(d, 'tls.dnsNames');
  for (const ip of ips) assertIp(ip, 'tls.ipAddresses');
  const renewBeforeMs = (opts.renewBeforeDays ?? 30) * DAY_MS;
  const dnsNames = normalizeNames([...serviceDnsNames(opts.service, opts.namespace), ...extraDns]);
  const ipAddresses = normalizeNames(ips.map(canonicalIp));

  await ensureDir(opts.dir);
  const path = (f: string) => join(opts.dir, f);
  const onDisk = {
    caPem: await readOptional(path(FILES.caCert)),
    caKey: await readOptional(path(FILES.caKey)),
    certPem: await readOptional(path(FILES.cert)),
    keyPem: await readOptional(path(FILES.key)),
  };

  const caReason = caProblem(onDisk.caPem, onDisk.caKey, renewBeforeMs);
  let ca: CertAndKey;
  let leafReason: string | undefined;
  let leaf: CertAndKey | undefined;
  if (caReason) {
    // Both keys at once: OpenSSL's prime search runs on the libuv pool, one per core.
    const [caKey, leafKey] = await Promise.all([generateRsaKey(), generateRsaKey()]);
    ca = await createCa({ key: caKey, validityDays: opts.caValidityDays });
    leafReason = 'new CA';
    leaf = await issueServing(ca, leafKey);
  } else {
    ca = { certPem: onDisk.caPem!, keyPem: onDisk.caKey! };
    leafReason = leafProblem(onDisk.certPem, onDisk.keyPem, ca.certPem, {
      dnsNames,
      ipAddresses,
      renewBeforeMs,
    });
    if (leafReason) leaf = await issueServing(ca, await generateRsaKey());
    else leaf = { certPem: onDisk.certPem!, keyPem: onDisk.keyPem! };
  }

  if (caReason) {
    await writeFileAtomic(path(FILES.caKey), ca.keyPem, 0o600);
    await writeFileAtomic(path(FILES.caCert), ca.certPem, 0o644);
  }
  if (leafReason) {
    // Key first: a hot-reloading reader that sees the new key with the old cert rejects
    // the pair and waits for the cert (see watch.ts).
    await writeFileAtomic(path(FILES.key), leaf.keyPem, 0o600);
    await writeFileAtomic(path(FILES.cert), leaf.certPem, 0o644);
  }

  return {
    caBundle: Buffer.from(ca.certPem).toString('base64'),
    caPem: ca.certPem,
    certPem: leaf.certPem,
    keyPem: leaf.keyPem,
    issuedCa: caReason !== undefined,
    issuedLeaf: leafReason !== undefined,
    caReason,
    leafReason,
    ca: describeCertificate(new X509Certificate(ca.certPem)),
    leaf: describeCertificate(new X509Certificate(leaf.certPem)),
  };

  function issueServing(signer: CertAndKey, key: Awaited<ReturnType<typeof generateRsaKey>>) {
    return issue({
      ca: signer,
      key,
      commonName: `${opts.service}.${opts.namespace}.svc`,
      // clientAuth too: replicas present it to each other (peer endpoints, src/server/client-cert.ts).
      usages: ['serverAuth', 'clientAuth'],
      dnsNames,
      ipAddresses,
      validityDays: opts.leafValidityDays,
    });
  }
}

/** Why the CA on disk cannot be reused, or undefined when it can. */
function caProblem(
  certPem: string | undefined,
  keyPem: string | undefined,
  renewBeforeMs: number,
): string | undefined {
  if (certPem === undefined || keyPem === undefined) {
    return `${certPem === undefined ? FILES.caCert : FILES.caKey} missing`;
  }
  const parsed = parsePair(certPem, keyPem, FILES.caCert, FILES.caKey);
  if (typeof parsed === 'string') return parsed;
  if (!parsed.ca) return `${FILES.caCert} is not a CA certificate`;
  return expiryProblem(parsed, renewBeforeMs, 'CA');
}

function leafProblem(
  certPem: string | undefined,
  keyPem: string | undefined,
  caPem: string,
  want: { dnsNames: string[]; ipAddresses: string[]; renewBeforeMs: number },
): string | undefined {
  if (certPem === undefined || keyPem === undefined) {
    return `${certPem === undefined ? FILES.cert : FILES.key} missing`;
  }
  const parsed = parsePair(certPem, keyPem, FILES.cert, FILES.key);
  if (typeof parsed === 'string') return parsed;
  if (!chainsTo(parsed, new X509Certificate(caPem))) return `${FILES.cert} is not signed by the CA`;
  const info = describeCertificate(parsed);
  const have = {
    dns: normalizeNames(info.dnsNames).join(','),
    ip: normalizeNames(info.ipAddresses.map(canonicalIp)).join(','),
  };
  if (have.dns !== want.dnsNames.join(',') || have.ip !== want.ipAddresses.join(',')) {
    return 'subject alternative names changed';
  }
  if (!info.extKeyUsages.includes(EKU_SERVER_AUTH)) return `${FILES.cert} lacks serverAuth usage`;
  return expiryProblem(parsed, want.renewBeforeMs, 'serving certificate');
}

function parsePair(
  certPem: string,
  keyPem: string,
  certFile: string,
  keyFile: string,
): X509Certificate | string {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return `${certFile} is not a valid certificate`;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) {
      return `${keyFile} does not match ${certFile}`;
    }
  } catch {
    return `${keyFile} is not a valid private key`;
  }
  return cert;
}

function expiryProblem(cert: X509Certificate, renewBeforeMs: number, what: string) {
  const notAfter = new Date(cert.validTo);
  if (notAfter.getTime() - Date.now() < renewBeforeMs) {
    return `${what} expires ${notAfter.toISOString()}, within the renewal window`;
  }
  if (new Date(cert.validFrom).getTime() > Date.now()) return `${what} is not valid yet`;
  return undefined;
}
