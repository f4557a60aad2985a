// `npm start` as a newcomer runs it: the built CLI serves /livez over TLS with the
// certificate it generated, and refuses bad input with one clear line.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { Agent, request } from 'node:https';
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

  // npm start on a laptop: with no API server nothing routes by readiness, so Ctrl-C has no
  // endpoints to wait for (server.shutdownDelaySeconds defaults to 0 then, 10 with one).
  it('Ctrl-C without an API server exits without the shutdown delay', async () => {
    const p = run(['serve', '--port', String(await freePort()), '--certs', join(tmp(), 'certs')]);
    for (let i = 0; i < 300 && !p.output().includes('annex is serving'); i++)
      await new Promise((r) => setTimeout(r, 100));
    p.child.kill('SIGINT');
    expect(await p.exited).toBe(0);
    const shutdown = p
      .output()
      .split('\n')
      .find((l) => l.includes('shutting down'));
    expect(JSON.parse(shutdown!)).toMatchObject({ delaySeconds: 0 });
  });

  // What a Kubernetes server does on SIGTERM: /readyz 503 at once, keep serving for the
  // delay, then stop accepting, Connection: close / GOAWAY, let in-flight requests and a
  // half-sent upload finish, end watches cleanly, exit 0.
  it('drains on SIGTERM under keep-alive load', async () => {
    const certs = join(tmp(), 'certs');
    const config = join(tmp(), 'annex.yaml');
    writeFileSync(config, 'server:\n  shutdownDelaySeconds: 2\n  shutdownTimeoutSeconds: 10\n');
    const port = await freePort();
    const p = run(['serve', '--port', String(port), '--certs', certs, '--config', config]);
    for (let i = 0; i < 100 && !p.output().includes('annex is serving'); i++)
      await new Promise((r) => setTimeout(r, 100));
    const ca = readFileSync(join(certs, 'ca.crt'));
    const base = `https://127.0.0.1:${port}`;
    const tally = { served: 0, refused: 0, reset: 0 };
    const resets: string[] = [];
    const once = (agent: Agent | false, path: string, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          `${base}${path}`,
          {
            ca,
            servername: 'localhost',
            agent,
            method: body ? 'POST' : 'GET',
            headers: body ? { 'content-type': 'application/json' } : {},
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
            res.on('error', reject);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const review = JSON.stringify({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u1',
        kind: { group: '', version: 'v1', kind: 'ConfigMap' },
        resource: { group: '', version: 'v1', resource: 'configmaps' },
        operation: 'CREATE',
        object: { metadata: { name: 'ok' } },
      },
    });
    let loading = true;
    const worker = async (n: number) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      for (let i = 0; loading && i < 100_000; i++) {
        try {
          await once(
            agent,
            n % 2 ? '/livez' : '/validate/names.annex.dev',
            n % 2 ? undefined : review,
          );
          tally.served++;
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
            tally.refused++;
            await new Promise((r) => setTimeout(r, 20));
          } else {
            tally.reset++;
            resets.push(`${(e as NodeJS.ErrnoException).code ?? ''} ${(e as Error).message}`);
          }
        }
      }
      agent.destroy();
    };
    // Each answer with when its request was sent: one sent before the signal may answer
    // 200 after it on a busy machine, and says nothing about the drain.
    const readyz: { sent: number; code: number | string }[] = [];
    let polling = true;
    const poll = (async () => {
      for (let i = 0; polling && i < 1000; i++) {
        const sent = Date.now();
        const code = await once(false, '/readyz').catch(
          (e: NodeJS.ErrnoException) => e.code ?? 'error',
        );
        readyz.push({ sent, code });
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    // A watch over HTTP/1.1, an HTTP/2 session, and an upload half sent.
    const watch = new Promise<string>((resolve) => {
      const req = request(
        `${base}/apis/metrics.annex.dev/v1beta1/nodes?watch=true`,
        { ca, servername: 'localhost', agent: false },
        (res) => {
          res.resume();
          res.on('end', () => resolve('ended'));
          res.on('aborted', () => resolve('aborted'));
          res.on('error', (e) => resolve(`error ${e.message}`));
        },
      );
      req.on('error', (e) => resolve(`error ${e.message}`));
      req.end();
    });
    const h2 = http2.connect(base, { ca, servername: 'localhost' });
    h2.on('error', () => {});
    const goaway = new Promise<boolean>((resolve) => {
      h2.once('goaway', () => resolve(true));
      h2.once('close', () => resolve(false));
    });
    await new Promise((r) => h2.once('connect', r));
    let upload!: ReturnType<typeof request>;
    const uploaded = new Promise<number | string>((resolve) => {
      upload = request(
        `${base}/validate/names.annex.dev`,
        {
          ca,
          servername: 'localhost',
          agent: false,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': review.length },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      upload.on('error', (e) => resolve(`error ${e.message}`));
      upload.write(review.slice(0, 50));
    });
    const workers = [0, 1, 2, 3].map(worker);
    await new Promise((r) => setTimeout(r, 1000));
    const t0 = Date.now();
    const exit = p.exited.then((code) => ({ code, tookMs: Date.now() - t0 }));
    p.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    upload.end(review.slice(50)); // the rest of the upload arrives during the delay
    const { code, tookMs } = await exit;
    loading = false;
    polling = false;
    await Promise.all([...workers, poll]);
    h2.destroy();
    const seen = readyz.filter((r) => r.sent >= t0).map((r) => r.code);
    const figures = { tookMs, code, tally, resets, readyz: seen.join(','), watch: await watch };
    console.log(`SIGTERM figures: ${JSON.stringify(figures)}`);
    expect(code).toBe(0);
    // 503 at once: only a request the server took before handling the signal sees 200.
    const drain = seen.indexOf(503);
    expect(drain).toBeGreaterThanOrEqual(0);
    expect(drain).toBeLessThanOrEqual(1);
    expect(seen.filter((c) => c === 503).length).toBeGreaterThanOrEqual(5); // ≈ the 2 s delay
    expect(seen.slice(drain)).not.toContain(200);
    expect(await uploaded).toBe(200);
    expect(await watch).toBe('ended');
    expect(await goaway).toBe(true);
    expect(tally.reset).toBe(0);
    expect(tally.served).toBeGreaterThan(0);
    expect(tookMs).toBeGreaterThan(2000);
    expect(tookMs).toBeLessThan(12_000);
  }, 60_000);

  it('names a bad flag', async () => {
    const p = run(['serve', '--port', 'eighty']);
    expect(await p.exited).not.toBe(0);
    expect(p.output()).toContain("option '--port <port>' argument 'eighty' is invalid");
  });
});
