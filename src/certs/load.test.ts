import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCertificates, type EnsureResult } from './ensure.js';
import { createCa } from './issue.js';
import { CertificateFileError, loadServingMaterial } from './load.js';

let root: string;
let good: EnsureResult;
let n = 0;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'annex-load-'));
  good = await ensureCertificates({ dir: join(root, 'good'), service: 's', namespace: 'n' });
});
afterAll(() => rm(root, { recursive: true, force: true }));

async function folder(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(root, `case${n++}-`));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

async function failure(dir: string): Promise<CertificateFileError> {
  try {
    loadServingMaterial(dir);
  } catch (e) {
    expect(e).toBeInstanceOf(CertificateFileError);
    return e as CertificateFileError;
  }
  throw new Error('expected loadServingMaterial to throw');
}

describe('loadServingMaterial', () => {
  it('returns cert, key and ca', () => {
    expect(loadServingMaterial(join(root, 'good'))).toEqual({
      cert: good.certPem,
      key: good.keyPem,
      ca: good.caPem,
    });
  });

  it('works without ca.crt (a plain kubernetes.io/tls Secret)', async () => {
    const dir = await folder({ 'tls.crt': good.certPem, 'tls.key': good.keyPem });
    expect(loadServingMaterial(dir)).toEqual({ cert: good.certPem, key: good.keyPem });
  });

  it('names a missing tls.crt or tls.key', async () => {
    const noCert = await folder({ 'tls.key': good.keyPem });
    const e1 = await failure(noCert);
    expect(e1.file).toBe(join(noCert, 'tls.crt'));
    expect(e1.message).toBe(`cannot read ${join(noCert, 'tls.crt')}: file not found`);
    const noKey = await folder({ 'tls.crt': good.certPem });
    expect((await failure(noKey)).file).toBe(join(noKey, 'tls.key'));
  });

  it('names a corrupt certificate, key or CA', async () => {
    const badCert = await folder({ 'tls.crt': 'not pem', 'tls.key': good.keyPem });
    expect((await failure(badCert)).message).toMatch(/tls\.crt: no PEM certificate found/);
    const truncated = good.certPem.slice(0, 300) + '\n-----END CERTIFICATE-----\n';
    const badDer = await folder({ 'tls.crt': truncated, 'tls.key': good.keyPem });
    expect((await failure(badDer)).message).toMatch(/tls\.crt: not a valid PEM certificate/);
    const badKey = await folder({ 'tls.crt': good.certPem, 'tls.key': 'nope' });
    const e = await failure(badKey);
    expect(e.file).toBe(join(badKey, 'tls.key'));
    expect(e.message).toMatch(/not a valid PEM private key/);
    const badCa = await folder({ 'tls.crt': good.certPem, 'tls.key': good.keyPem, 'ca.crt': 'x' });
    expect((await failure(badCa)).file).toBe(join(badCa, 'ca.crt'));
  });

  it('rejects a key that belongs to another certificate', async () => {
    const other = await createCa();
    const dir = await folder({ 'tls.crt': good.certPem, 'tls.key': other.keyPem });
    const e = await failure(dir);
    expect(e.message).toBe(
      `${join(dir, 'tls.key')} does not match the certificate in ${join(dir, 'tls.crt')}`,
    );
  });
});
