import { X509Certificate } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { Agent, createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './files.js';
import { createCa, issue, type CertAndKey } from './issue.js';
import { loadServingMaterial, type ServingMaterial } from './load.js';
import { serviceDnsNames } from './names.js';
import { watchServingMaterial } from './reload.js';

const SERVERNAME = 'annex.annex-system.svc';
let ca: CertAndKey;
let leaves: CertAndKey[];

beforeAll(async () => {
  ca = await createCa();
  const one = () =>
    issue({
      ca,
      commonName: SERVERNAME,
      usages: ['serverAuth'],
      dnsNames: serviceDnsNames('annex', 'annex-system'),
    });
  leaves = await Promise.all([one(), one()]);
});

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

/** A folder laid out like a kubelet Secret volume: files → ..data/… → ..<version>/… */
async function secretMount(leaf: CertAndKey): Promise<{ dir: string; swap(files: Record<string, string>): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'annex-watch-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  let version = 0;
  const swap = async (files: Record<string, string>) => {
    const v = `..v${version++}`;
    await mkdir(join(dir, v));
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, v, name), text);
    await symlink(v, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  await swap({ 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem, 'ca.crt': ca.certPem });
  for (const f of ['tls.crt', 'tls.key', 'ca.crt']) await symlink(join('..data', f), join(dir, f));
  return { dir, swap };
}

async function startServer(material: ServingMaterial): Promise<{ server: Server; port: number }> {
  const server = createServer({ cert: material.cert, key: material.key, keepAliveTimeout: 60_000 }, (_req, res) =>
    res.end('ok'),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { server, port: (server.address() as AddressInfo).port };
}

function peerFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername: SERVERNAME, ca: ca.certPem }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.end();
      resolve(fp);
    });
    s.on('error', reject);
  });
}

async function until(cond: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('watchServingMaterial', () => {
  it('rotates a live server through a Secret-style ..data swap with no failed request', async () => {
    const [oldLeaf, newLeaf] = leaves as [CertAndKey, CertAndKey];
    const mount = await secretMount(oldLeaf);
    const { server, port } = await startServer(loadServingMaterial(mount.dir));
    const changes: ServingMaterial[] = [];
    const errors: Error[] = [];
    const stop = watchServingMaterial(
      mount.dir,
      (m) => {
        server.setSecureContext({ cert: m.cert, key: m.key });
        changes.push(m);
      },
      (e) => errors.push(e),
      // A poll period longer than the test: the swap must be seen through fs.watch.
      { debounceMs: 50, pollIntervalMs: 60_000 },
    );
    cleanups.push(stop);
    expect(await peerFingerprint(port)).toBe(fingerprint(oldLeaf.certPem));

    const agent = new Agent({ keepAlive: true, maxSockets: 4, ca: ca.certPem });
    cleanups.push(() => agent.destroy());
    const get = (fresh: boolean) =>
      new Promise<void>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port,
            path: '/',
            servername: SERVERNAME,
            ...(fresh ? { agent: false, ca: ca.certPem } : { agent }),
          },
          (res) => {
            res.resume();
            res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`${res.statusCode}`))));
          },
        );
        req.on('error', reject);
        req.end();
      });

    let ok = 0;
    let failed = 0;
    let fresh = 0;
    let done = false;
    // One sequential keep-alive client, three concurrent ones, and one opening a new TLS
    // connection per request so handshakes happen on both sides of the swap.
    const worker = async (newConnEach: boolean) => {
      while (!done) {
        try {
          await get(newConnEach);
          ok++;
          if (newConnEach) fresh++;
        } catch {
          failed++;
        }
      }
    };
    const load = Promise.all([worker(false), worker(false), worker(false), worker(false), worker(true)]);
    // Counted, not timed: 50 requests (some on new connections) before the swap, and 50
    // after the watcher has seen it, however busy the machine.
    await until(() => ok >= 50 && fresh >= 5, 20_000);
    await mount.swap({ 'tls.crt': newLeaf.certPem, 'tls.key': newLeaf.keyPem, 'ca.crt': ca.certPem });
    await until(() => changes.length > 0, 20_000);
    const [okAtSwap, freshAtSwap] = [ok, fresh];
    await until(() => ok >= okAtSwap + 50 && fresh >= freshAtSwap + 5, 20_000);
    done = true;
    await load;

    expect(failed).toBe(0);
    expect(errors).toEqual([]);
    expect(changes).toHaveLength(1);
    expect(changes[0]!.cert).toBe(newLeaf.certPem);
    expect(await peerFingerprint(port)).toBe(fingerprint(newLeaf.certPem));
    process.stdout.write(
      `rotation: ${ok} requests (${fresh} on new connections), ${failed} failed, swap seen by the watcher\n`,
    );
  }, 90_000);

  it('keeps the old material and reports once when an update is corrupt', async () => {
    const [oldLeaf, newLeaf] = leaves as [CertAndKey, CertAndKey];
    const mount = await secretMount(oldLeaf);
    const changes: ServingMaterial[] = [];
    const errors: Error[] = [];
    cleanups.push(
      watchServingMaterial(mount.dir, (m) => changes.push(m), (e) => errors.push(e), {
        debounceMs: 30,
        pollIntervalMs: 100,
      }),
    );
    await mount.swap({ 'tls.crt': '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', 'tls.key': newLeaf.keyPem });
    await until(() => errors.length > 0, 10_000);
    await new Promise((r) => setTimeout(r, 400)); // several more polls of the same bad content
    expect(errors).toHaveLength(1);
    expect(errors[0]!.message).toMatch(/tls\.crt: not a valid PEM certificate/);
    expect(changes).toEqual([]);

    // A key from another pair is corrupt too: never handed to onChange.
    await mount.swap({ 'tls.crt': oldLeaf.certPem, 'tls.key': newLeaf.keyPem });
    await until(() => errors.length > 1, 10_000);
    expect(errors[1]!.message).toMatch(/tls\.key does not match/);
    expect(changes).toEqual([]);

    // A good update afterwards goes through.
    await mount.swap({ 'tls.crt': newLeaf.certPem, 'tls.key': newLeaf.keyPem, 'ca.crt': ca.certPem });
    await until(() => changes.length > 0, 10_000);
    expect(changes[0]).toEqual({ cert: newLeaf.certPem, key: newLeaf.keyPem, ca: ca.certPem });
  });

  it('waits out a writer caught between tls.key and tls.crt (plain files replaced by rename)', async () => {
    const [oldLeaf, newLeaf] = leaves as [CertAndKey, CertAndKey];
    const dir = await mkdtemp(join(tmpdir(), 'annex-watch-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await writeFile(join(dir, 'tls.crt'), oldLeaf.certPem);
    await writeFile(join(dir, 'tls.key'), oldLeaf.keyPem);
    const changes: ServingMaterial[] = [];
    const errors: Error[] = [];
    cleanups.push(
      // Settle time 2 × 500 ms: far above the gap between the two writes below, even on a
      // loaded machine.
      watchServingMaterial(dir, (m) => changes.push(m), (e) => errors.push(e), {
        debounceMs: 500,
        pollIntervalMs: 50,
      }),
    );
    await writeFileAtomic(join(dir, 'tls.key'), newLeaf.keyPem, 0o600);
    await new Promise((r) => setTimeout(r, 120)); // the poll sees the mismatched pair
    await writeFileAtomic(join(dir, 'tls.crt'), newLeaf.certPem, 0o644);
    await until(() => changes.length > 0, 10_000);
    expect(errors).toEqual([]);
    expect(changes).toEqual([{ cert: newLeaf.certPem, key: newLeaf.keyPem }]);
  });

  it('stops calling back after stop()', async () => {
    const [oldLeaf, newLeaf] = leaves as [CertAndKey, CertAndKey];
    const mount = await secretMount(oldLeaf);
    const changes: ServingMaterial[] = [];
    const stop = watchServingMaterial(mount.dir, (m) => changes.push(m), () => {}, {
      debounceMs: 10,
      pollIntervalMs: 50,
    });
    stop();
    await mount.swap({ 'tls.crt': newLeaf.certPem, 'tls.key': newLeaf.keyPem });
    await new Promise((r) => setTimeout(r, 300));
    expect(changes).toEqual([]);
  });
});
