// RSA keys come from Node's native crypto (OpenSSL): node-forge's pure-JS prime search takes
// seconds for 2048 bits, OpenSSL takes tens of milliseconds and runs off the main thread.
import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generateKeyPairAsync = promisify(generateKeyPair);

export interface KeyPair {
  /** PKCS#8 PEM ("BEGIN PRIVATE KEY"), readable by Node, Go and OpenSSL. */
  privateKeyPem: string;
  /** SubjectPublicKeyInfo PEM ("BEGIN PUBLIC KEY"). */
  publicKeyPem: string;
}

export async function generateRsaKey(bits = 2048): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPairAsync('rsa', {
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { privateKeyPem: privateKey, publicKeyPem: publicKey };
}
