// Loading the serving key pair for node:https. Every failure names the exact file, and a
// key that does not belong to the certificate is caught here rather than as an opaque
// TLS handshake failure later.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FILES } from './files.js';

/** PEM strings in the shape node:tls `createSecureContext` takes. */
export interface ServingMaterial {
  cert: string;
  key: string;
  /** The CA bundle (ca.crt), when the folder has one. */
  ca?: string;
}

/** A certificate file that is missing or unusable; `file` is its path. */
export class CertificateFileError extends Error {
  constructor(
    readonly file: string,
    message: string,
  ) {
    super(message);
  }
}

/** Reads and checks tls.crt, tls.key and (optional) ca.crt in `dir`. */
export function loadServingMaterial(dir: string): ServingMaterial {
  return checkServingFiles(readServingFiles(dir));
}

/** The raw state of the three files: text, or the error that reading produced. */
export interface ServingFiles {
  dir: string;
  cert: string | CertificateFileError;
  key: string | CertificateFileError;
  ca: string | CertificateFileError | undefined;
}

export function readServingFiles(dir: string): ServingFiles {
  return {
    dir,
    cert: read(join(dir, FILES.cert), true)!,
    key: read(join(dir, FILES.key), true)!,
    ca: read(join(dir, FILES.caCert), false),
  };
}

export function checkServingFiles(files: ServingFiles): ServingMaterial {
  const certFile = join(files.dir, FILES.cert);
  const keyFile = join(files.dir, FILES.key);
  const { cert, key, ca } = files;
  if (cert instanceof Error) throw cert;
  if (key instanceof Error) throw key;
  if (ca instanceof Error) throw ca;

  const x509 = parseCert(certFile, cert);
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new CertificateFileError(keyFile, `${keyFile}: not a valid PEM private key (${msg(e)})`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new CertificateFileError(keyFile, `${keyFile} does not match the certificate in ${certFile}`);
  }
  if (ca !== undefined) parseCert(join(files.dir, FILES.caCert), ca);
  return ca === undefined ? { cert, key } : { cert, key, ca };
}

function read(file: string, required: boolean): string | CertificateFileError | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !required) return undefined;
    const what = code === 'ENOENT' ? 'file not found' : msg(e);
    return new CertificateFileError(file, `cannot read ${file}: ${what}`);
  }
}

function parseCert(file: string, pem: string): X509Certificate {
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new CertificateFileError(file, `${file}: no PEM certificate found`);
  }
  try {
    return new X509Certificate(pem);
  } catch (e) {
    throw new CertificateFileError(file, `${file}: not a valid PEM certificate (${msg(e)})`);
  }
}

function msg(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
