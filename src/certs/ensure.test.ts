import { X509Certificate } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureCertificates, type EnsureOptions } from './ensure.js';
import { createCa } from './issue.js';

let dir: string;
let base: EnsureOptions;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'annex-ensure-'));
  base = { dir: join(dir, 'certs'), service: 'annex', namespace: 'annex-system' };
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const read = (f: string) => readFile(join(base.dir, f), 'utf8');

describe('ensureCertificates', () => {
  it('creates the four files, keys 0600, and returns the caBundle', async () => {
    const r = await ensureCertificates(base);
    expect(r.issuedCa).toBe(true);
    expect(r.issuedLeaf).toBe(true);
    expect(await read('ca.crt')).toBe(r.caPem);
    expect(await read('tls.crt')).toBe(r.certPem);
    expect(await read('tls.key')).toBe(r.keyPem);
    expect(Buffer.from(r.caBundle, 'base64').toString()).toBe(r.caPem);
    expect((await stat(join(base.dir, 'ca.key'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(base.dir, 'tls.key'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(base.dir, 'tls.crt'))).mode & 0o777).toBe(0o644);
    expect(r.leaf.dnsNames).toEqual([
      'annex',
      'annex.annex-system',
      'annex.annex-system.svc',
      'annex.annex-system.svc.cluster.local',
      'localhost',
    ]);
    expect(r.leaf.ipAddresses).toEqual(['127.0.0.1']);
    expect(new X509Certificate(r.certPem).checkIssued(new X509Certificate(r.caPem))).toBe(true);
  });

  it('reuses both on a second run, re-issues only the leaf when SANs change', async () => {
    const first = await ensureCertificates(base);
    const second = await ensureCertificates(base);
    expect(second).toMatchObject({ issuedCa: false, issuedLeaf: false });
    expect(second.certPem).toBe(first.certPem);
    expect(second.caBundle).toBe(first.caBundle);

    // Same set in another order and IPv6 spelling is not a change.
    const same = await ensureCertificates({ ...base, dnsNames: ['localhost', 'localhost'] });
    expect(same.issuedLeaf).toBe(false);

    const third = await ensureCertificates({ ...base, dnsNames: ['localhost', 'annex.example.com'] });
    expect(third).toMatchObject({ issuedCa: false, issuedLeaf: true });
    expect(third.leafReason).toMatch(/subject alternative names/);
    expect(third.caBundle).toBe(first.caBundle);
    expect(third.leaf.dnsNames).toContain('annex.example.com');
    expect(await read('tls.crt')).toBe(third.certPem);

    const ipv6 = await ensureCertificates({ ...base, dnsNames: ['localhost', 'annex.example.com'], ipAddresses: ['::1'] });
    expect(ipv6.issuedLeaf).toBe(true);
    const ipv6Again = await ensureCertificates({
      ...base,
      dnsNames: ['annex.example.com', 'localhost'],
      ipAddresses: ['0:0::1'],
    });
    expect(ipv6Again.issuedLeaf).toBe(false);
  });

  it('renews a leaf inside the renewal window and keeps the CA', async () => {
    const first = await ensureCertificates({ ...base, leafValidityDays: 10, renewBeforeDays: 5 });
    const kept = await ensureCertificates({ ...base, leafValidityDays: 10, renewBeforeDays: 5 });
    expect(kept.issuedLeaf).toBe(false);
    const renewed = await ensureCertificates({ ...base, renewBeforeDays: 30 });
    expect(renewed).toMatchObject({ issuedCa: false, issuedLeaf: true });
    expect(renewed.leafReason).toMatch(/renewal window/);
    expect(renewed.caPem).toBe(first.caPem);
    expect(renewed.leaf.notAfter.getTime() - Date.now()).toBeGreaterThan(300 * 86_400_000);
  });

  it('replaces a CA inside the renewal window, and the leaf with it', async () => {
    const first = await ensureCertificates({ ...base, caValidityDays: 20 });
    const r = await ensureCertificates({ ...base, renewBeforeDays: 30 });
    expect(r).toMatchObject({ issuedCa: true, issuedLeaf: true });
    expect(r.caReason).toMatch(/renewal window/);
    expect(r.caPem).not.toBe(first.caPem);
  });

  it('writes every key 0600 and nothing else, under umask 0 and when replacing 0644 keys', async () => {
    const modes = async () =>
      Object.fromEntries(
        await Promise.all(
          (await readdir(base.dir)).map(async (f) => [f, (await stat(join(base.dir, f))).mode & 0o777]),
        ),
      );
    const umask = process.umask(0);
    try {
      await ensureCertificates({ ...base, caValidityDays: 20 });
      const expected = { 'ca.crt': 0o644, 'ca.key': 0o600, 'tls.crt': 0o644, 'tls.key': 0o600 };
      expect(await modes()).toEqual(expected);
      // Loosened by hand, then both replaced (CA in its renewal window): 0600 again.
      for (const f of ['ca.key', 'tls.key']) await chmod(join(base.dir, f), 0o644);
      const r = await ensureCertificates({ ...base, renewBeforeDays: 30 });
      expect(r).toMatchObject({ issuedCa: true, issuedLeaf: true });
      expect(await modes()).toEqual(expected);
    } finally {
      process.umask(umask);
    }
  });

  it('regenerates both when the CA is missing but a leaf is present', async () => {
    const first = await ensureCertificates(base);
    await unlink(join(base.dir, 'ca.key'));
    const r = await ensureCertificates(base);
    expect(r).toMatchObject({ issuedCa: true, issuedLeaf: true });
    expect(r.caReason).toMatch(/ca\.key missing/);
    expect(r.certPem).not.toBe(first.certPem);
  });

  it('re-issues a leaf that does not chain to the CA on disk', async () => {
    await ensureCertificates(base);
    const other = await createCa();
    await writeFile(join(base.dir, 'ca.crt'), other.certPem);
    await writeFile(join(base.dir, 'ca.key'), other.keyPem);
    const r = await ensureCertificates(base);
    expect(r).toMatchObject({ issuedCa: false, issuedLeaf: true });
    expect(r.leafReason).toMatch(/not signed by the CA/);
    expect(new X509Certificate(r.certPem).verify(new X509Certificate(other.certPem).publicKey)).toBe(true);
  });

  it('re-issues when tls.key does not belong to tls.crt, or a CA key is corrupt', async () => {
    await ensureCertificates(base);
    await writeFile(join(base.dir, 'tls.key'), await read('ca.key'));
    const r = await ensureCertificates(base);
    expect(r.leafReason).toMatch(/tls\.key does not match tls\.crt/);
    await writeFile(join(base.dir, 'ca.key'), 'garbage');
    const r2 = await ensureCertificates(base);
    expect(r2.caReason).toMatch(/ca\.key is not a valid private key/);
  });

  it('refuses bad service and namespace names, naming the setting', async () => {
    await expect(ensureCertificates({ ...base, service: 'Annex' })).rejects.toThrow(
      /tls\.service must be an RFC 1123 label.*got "Annex"/,
    );
    await expect(ensureCertificates({ ...base, namespace: 'a'.repeat(64) })).rejects.toThrow(
      /tls\.namespace must be an RFC 1123 label/,
    );
    await expect(ensureCertificates({ ...base, namespace: 'x-' })).rejects.toThrow(/tls\.namespace/);
    await expect(ensureCertificates({ ...base, ipAddresses: ['300.1.1.1'] })).rejects.toThrow(
      /tls\.ipAddresses must be an IPv4 or IPv6 address, got "300\.1\.1\.1"/,
    );
    await expect(ensureCertificates({ ...base, dnsNames: ['a_b'] })).rejects.toThrow(/tls\.dnsNames/);
  });

  it('names the directory it cannot create', async () => {
    const file = join(dir, 'plain-file');
    await writeFile(file, 'x');
    const bad = join(file, 'certs');
    await expect(ensureCertificates({ ...base, dir: bad })).rejects.toThrow(
      `cannot create certificate directory ${bad}`,
    );
  });

  it('creates missing parents, and fails (not hangs) where mkdir says ENOENT under /proc', async () => {
    const deep = join(dir, 'a', 'b', 'certs');
    await ensureCertificates({ ...base, dir: deep });
    expect((await stat(join(deep, 'tls.crt'))).isFile()).toBe(true);
    // Node 20's mkdir({ recursive: true }) loops forever on this path.
    if (process.platform !== 'linux') return;
    await expect(ensureCertificates({ ...base, dir: '/proc/annex-certs' })).rejects.toThrow(
      /^cannot create certificate directory \/proc\/annex-certs: ENOENT/,
    );
  });

  it('refuses an output path that is a regular file', async () => {
    const file = join(dir, 'plain-file');
    await writeFile(file, 'x');
    await expect(ensureCertificates({ ...base, dir: file })).rejects.toThrow(
      `cannot create certificate directory ${file}: ${file} exists and is not a directory`,
    );
  });
});
