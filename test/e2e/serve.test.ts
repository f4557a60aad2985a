// `npm start` as a newcomer runs it: the built CLI serves /livez over TLS with the
// certificate it generated, and refuses bad input with one clear line.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../cluster/control-plane.js';

const cli = join(import.meta.dirname, '..', '..', 'dist', 'cli', 'main.js');

function run(args: string[]): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number>;
} {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number>((r) => child.once('exit', (code) => r(code ?? -1)));
  return { child, output: () => out, exited };
}

function get(url: string, ca: Buffer): Promise<{ status: number; body: string; issuer: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, servername: 'localhost' }, (res) => {
      // Read the certificate now: after 'end' the socket may be gone.
      const peer = (res.socket as import('node:tls').TLSSocket).getPeerCertificate();
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body, issuer: String(peer.issuer.CN ?? '') }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('annex serve (what npm start runs)', () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), 'annex-serve-'));
    dirs.push(d);
    return d;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('generates certificates on first run and answers /livez over TLS', async () => {
    const certs = join(tmp(), 'certs');
    const port = await freePort();
    const p = run(['serve', '--port', String(port), '--certs', certs]);
    try {
      let res;
      for (let i = 0; i < 100 && !res; i++) {
        await new Promise((r) => setTimeout(r, 100));
        try {
          res = await get(`https://127.0.0.1:${port}/livez`, readFileSync(join(certs, 'ca.crt')));
        } catch {
          /* not listening yet */
        }
      }
      expect(res).toMatchObject({ status: 200, body: 'ok' });
      expect(res!.issuer).toMatch(/^annex-ca@\d+$/);
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  });

  it('refuses to start on a corrupt certificate, naming the file', async () => {
    const certs = tmp();
    const first = run(['serve', '--port', String(await freePort()), '--certs', certs]);
    for (let i = 0; i < 100 && !first.output().includes('annex is serving'); i++)
      await new Promise((r) => setTimeout(r, 100));
    first.child.kill('SIGTERM');
    await first.exited;
    writeFileSync(join(certs, 'tls.crt'), 'not a certificate\n');
    // As with a mounted Secret: annex must not paper over the bad file by generating one.
    const config = join(tmp(), 'annex.yaml');
    writeFileSync(config, 'tls:\n  generate: false\n');
    const p = run([
      'serve',
      '--port',
      String(await freePort()),
      '--certs',
      certs,
      '--config',
      config,
    ]);
    const code = await p.exited;
    expect(code).toBe(1);
    expect(p.output()).toContain(join(certs, 'tls.crt'));
    expect(p.output()).not.toMatch(/\n\s+at /); // no stack trace
  });

  it('names a bad flag', async () => {
    const p = run(['serve', '--port', 'eighty']);
    expect(await p.exited).not.toBe(0);
    expect(p.output()).toContain("option '--port <port>' argument 'eighty' is invalid");
  });
});
