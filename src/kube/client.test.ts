// The client's transport rules against a scripted HTTPS server on loopback: what the
// real API server does not do on demand (410 mid-watch, a dropped stream, a slow or
// non-Status answer).
import { mkdtempSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { opensslSelfSigned } from '../devcluster/pki.js';
import { lateness } from '../../test/unit/lateness.js';
import { KubeApiError, KubeClient, KubeUnreachableError, type WatchEvent } from './client.js';
import { staticToken, type Credential, type CredentialSource } from './credentials.js';

type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void;
let handler: Handler = (_req, res) => res.end();
let server: Server;
let dir: string;
let ca: Buffer;
const seen: {
  method: string;
  url: string;
  auth?: string;
  type?: string;
  body: string;
  clientCn?: string;
}[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'annex-kube-'));
  const tls = opensslSelfSigned(dir, 'serving', { cn: 'localhost', sans: ['IP:127.0.0.1'] });
  ca = Buffer.from(tls.cert);
  // Asks for a client certificate (as the API server does) without requiring one.
  server = createServer(
    { cert: tls.cert, key: tls.key, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          url: req.url!,
          auth: req.headers.authorization,
          type: req.headers['content-type'],
          body,
          clientCn: (req.socket as TLSSocket).getPeerCertificate().subject?.CN as
            string | undefined,
        });
        handler(req, res, new URL(req.url!, 'https://x'));
      });
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
}, 20_000);

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

function client(auth?: string | CredentialSource, timeoutMs?: number) {
  const port = (server.address() as AddressInfo).port;
  return new KubeClient(
    {
      server: `https://127.0.0.1:${port}`,
      ca,
      source: 'test',
      ...(auth ? { auth: typeof auth === 'string' ? staticToken(auth) : auth } : {}),
    },
    timeoutMs ? { timeoutMs } : {},
  );
}

const json = (res: ServerResponse, code: number, body: unknown) => {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

describe('KubeClient.request', () => {
  it('sends JSON, the bearer token, the patch content type and the apply query', async () => {
    seen.length = 0;
    handler = (_req, res) => json(res, 200, { ok: true });
    const k = client('tok-1');
    await k.patch('/api/v1/namespaces/a/configmaps/b', { data: {} }, 'apply', {
      fieldManager: 'annex',
      force: true,
    });
    await k.patch('/x', [{ op: 'remove', path: '/a' }], 'json');
    expect(seen[0]).toMatchObject({
      method: 'PATCH',
      url: '/api/v1/namespaces/a/configmaps/b?fieldManager=annex&force=true',
      auth: 'Bearer tok-1',
      type: 'application/apply-patch+yaml',
      body: '{"data":{}}',
    });
    expect(seen[1]).toMatchObject({ url: '/x', type: 'application/json-patch+json' });
    expect(() => k.patch('/x', {}, 'apply')).toThrow('server-side apply needs a fieldManager');
    k.close();
  });

  it('synthesizes a Status from a body that is not one (the aggregator 503)', async () => {
    handler = (_req, res) => {
      res.writeHead(503, { 'content-type': 'text/plain' });
      res.end('service unavailable');
    };
    const k = client();
    const err = (await k.get('/apis/x/v1').catch((e: unknown) => e)) as KubeApiError;
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err.status).toMatchObject({ code: 503, reason: 'ServiceUnavailable' });
    k.close();
  });

  it('gives up after timeoutMs', async () => {
    handler = () => {}; // never answers
    const k = client();
    const err = await k.request('GET', '/slow', { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeUnreachableError);
    expect((err as Error).message).toBe(
      `the API server at ${k.server} did not answer within 0.2 s (GET /slow)`,
    );
    k.close();
  });

  it('gives up on a body that stops half-way, within the budget', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"items": [');
    };
    const k = client(undefined, 300);
    const late = lateness();
    const started = Date.now();
    await expect(k.get('/half')).rejects.toThrow(
      `the API server at ${k.server} stopped answering for 0.3 s (GET /half)`,
    );
    expect(Date.now() - started - late.ms()).toBeLessThan(2000);
    late.stop();
    k.close();
  });
});

describe('KubeClient against no server', () => {
  it('a closed port fails at once; a silent listener within the budget', async () => {
    const closed = await new Promise<number>((resolve) => {
      const s = createNetServer().listen(0, '127.0.0.1', () => {
        const { port } = s.address() as AddressInfo;
        s.close(() => resolve(port));
      });
    });
    const dead = new KubeClient({ server: `https://127.0.0.1:${closed}`, source: 't' });
    const err = await dead.get('/api').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KubeUnreachableError);
    expect((err as Error).message).toMatch(
      new RegExp(
        `^cannot connect to the API server at https://127.0.0.1:${closed}: .*ECONNREFUSED.* \\(GET /api\\)$`,
      ),
    );
    dead.close();

    // Accepts the TCP connection and never says a word (not even a TLS ServerHello).
    const sockets: Socket[] = [];
    const silent = createNetServer((sock) => sockets.push(sock));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const mute = new KubeClient(
      { server: `https://127.0.0.1:${port}`, source: 't' },
      { timeoutMs: 300 },
    );
    const late = lateness();
    const started = Date.now();
    await expect(mute.get('/api')).rejects.toThrow(
      `the API server at https://127.0.0.1:${port} did not answer within 0.3 s (GET /api)`,
    );
    expect(Date.now() - started - late.ms()).toBeLessThan(2000);
    late.stop();
    mute.close();
    sockets.forEach((s) => s.destroy());
    await new Promise((r) => silent.close(r));
  });
});

describe('KubeClient credentials', () => {
  it('on 401 drops the credential and retries once with a fresh one (exec, rotated file)', async () => {
    seen.length = 0;
    handler = (req, res) =>
      req.headers.authorization === 'Bearer fresh'
        ? json(res, 200, { ok: true })
        : json(res, 401, {
            kind: 'Status',
            code: 401,
            reason: 'Unauthorized',
            message: 'Unauthorized',
          });
    let current = 'stale';
    let rejected = 0;
    const rotating: CredentialSource = {
      get: () => ({ token: current }),
      rejected: () => {
        rejected++;
        current = 'fresh';
        return true;
      },
    };
    const k = client(rotating);
    expect(await k.get('/x')).toEqual({ ok: true });
    expect(seen.map((s) => s.auth)).toEqual(['Bearer stale', 'Bearer fresh']);
    expect(rejected).toBe(1);
    k.close();

    // A static token: no retry, the 401 is the answer.
    seen.length = 0;
    const fixed = client('stale');
    await expect(fixed.get('/x')).rejects.toMatchObject({ code: 401 });
    expect(seen).toHaveLength(1);
    fixed.close();
  });

  it("presents an exec plugin's client certificate, and the new one after rotation", async () => {
    handler = (_req, res) => json(res, 200, {});
    const one = opensslSelfSigned(dir, 'client-one', { cn: 'plugin-one' });
    const two = opensslSelfSigned(dir, 'client-two', { cn: 'plugin-two' });
    let cred: Credential = { cert: Buffer.from(one.cert), key: Buffer.from(one.key) };
    const k = client({ get: () => cred, rejected: () => false });
    seen.length = 0;
    await k.get('/a');
    cred = { cert: Buffer.from(two.cert), key: Buffer.from(two.key) };
    await k.get('/b');
    expect(seen.map((s) => s.clientCn)).toEqual(['plugin-one', 'plugin-two']);
    k.close();
  });
});

describe('KubeClient.watch', () => {
  it('relists on 410, resumes from the last version after a clean end, and stops', async () => {
    seen.length = 0;
    let watches = 0;
    handler = (_req, res, url) => {
      const rv = url.searchParams.get('resourceVersion');
      if (url.searchParams.get('watch') !== '1') {
        return json(res, 200, {
          metadata: { resourceVersion: '100' },
          items: [{ metadata: { name: 'a', resourceVersion: '90' } }],
        });
      }
      watches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      if (rv === '5') {
        // The history is compacted: an ERROR event carrying 410 Expired.
        res.end(
          JSON.stringify({
            type: 'ERROR',
            object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old' },
          }) + '\n',
        );
      } else if (rv === '100') {
        // Two events split across writes, then the server's timeout ends the stream.
        const line = JSON.stringify({
          type: 'ADDED',
          object: { metadata: { name: 'b', resourceVersion: '101' } },
        });
        res.write(line.slice(0, 10));
        setTimeout(() => {
          res.write(line.slice(10) + '\n');
          res.end(
            JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '105' } } }) +
              '\n',
          );
        }, 20);
      } else if (rv === '105') {
        res.write(
          JSON.stringify({
            type: 'DELETED',
            object: { metadata: { name: 'b', resourceVersion: '106' } },
          }) + '\n',
        );
      }
    };
    type Obj = { metadata: { name?: string } };
    const events: WatchEvent<Obj>[] = [];
    const errors: Error[] = [];
    const k = client();
    const stop = k.watch<Obj>(
      '/api/v1/configmaps',
      { resourceVersion: '5', query: { labelSelector: 'a=b' } },
      (e) => events.push(e),
      (e) => errors.push(e),
    );
    const deadline = Date.now() + 10_000;
    while (!events.some((e) => e.type === 'DELETED') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    stop();
    expect(events.map((e) => e.type)).toEqual(['RELISTED', 'ADDED', 'BOOKMARK', 'DELETED']);
    expect(events[0]).toMatchObject({
      type: 'RELISTED',
      resourceVersion: '100',
      items: [{ metadata: { name: 'a' } }],
    });
    expect(errors).toEqual([]);
    const requested = seen.map((s) => new URL(s.url, 'https://x').searchParams);
    expect(requested.map((q) => q.get('resourceVersion'))).toEqual(['5', null, '100', '105']);
    expect(requested.every((q) => q.get('labelSelector') === 'a=b')).toBe(true);
    expect(watches).toBe(3);
    k.close();
  });

  it('reports a failed watch and retries with backoff', async () => {
    let calls = 0;
    handler = (_req, res) => {
      calls++;
      json(res, 403, { kind: 'Status', code: 403, reason: 'Forbidden', message: 'nope' });
    };
    const errors: Error[] = [];
    const k = client();
    const stop = k.watch(
      '/x',
      { resourceVersion: '1', backoff: { initialMs: 30, maxMs: 60 } },
      () => {},
      (e) => errors.push(e),
    );
    const deadline = Date.now() + 5000;
    while (errors.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    stop();
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(errors[0]).toMatchObject({ code: 403, message: 'GET /x: 403 Forbidden: nope' });
    const after = calls;
    await new Promise((r) => setTimeout(r, 200));
    expect(calls).toBe(after); // stopped means stopped
    k.close();
  });

  it('reconnects a watch backing off after a connection failure at the next answer from the server', async () => {
    const watchAt: number[] = [];
    handler = (req, res, url) => {
      if (url.pathname === '/ok') return json(res, 200, {});
      watchAt.push(Date.now());
      if (watchAt.length === 1) return void req.socket.destroy(); // the server went away
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('');
    };
    const errors: Error[] = [];
    const k = client();
    const stop = k.watch(
      '/w',
      { resourceVersion: '1', backoff: { initialMs: 5000, maxMs: 5000 } },
      () => {},
      (e) => errors.push(e),
    );
    while (errors.length === 0) await new Promise((r) => setTimeout(r, 10));
    expect(errors[0]).toBeInstanceOf(KubeUnreachableError);
    const late = lateness();
    const answeredAt = Date.now();
    await k.get('/ok'); // any answer: the server is back
    while (watchAt.length < 2 && Date.now() - answeredAt < 8000)
      await new Promise((r) => setTimeout(r, 10));
    stop();
    k.close();
    expect(watchAt.length).toBe(2);
    // Not the 4–6 s backoff (this process's timers running late on a busy machine aside).
    expect(watchAt[1]! - answeredAt - late.ms()).toBeLessThan(1000);
    late.stop();
  });

  it('starts the backoff afresh after a watch that stood for a while', async () => {
    const watchAt: number[] = [];
    handler = (req, res) => {
      watchAt.push(Date.now());
      if (watchAt.length <= 3)
        return json(res, 503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
      if (watchAt.length === 4) {
        // Healthy for 1.2 s, then the server goes: the next retry is a new outage's first.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('');
        setTimeout(() => res.destroy(), 1200);
        return;
      }
      json(res, 503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
    };
    const k = client();
    const late = lateness();
    const stop = k.watch(
      '/w',
      { resourceVersion: '1', backoff: { initialMs: 50, maxMs: 10_000 } },
      () => {},
      () => {},
    );
    const deadline = Date.now() + 8000;
    while (watchAt.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    stop();
    k.close();
    expect(watchAt.length).toBe(5);
    // Backoffs 50, 100, 200 ms, then the healthy watch; without the reset the gap would be
    // ≥ 320 ms (this process's timers running late on a busy machine aside).
    expect(watchAt[4]! - watchAt[3]! - 1200 - late.ms()).toBeLessThan(250);
    late.stop();
  });

  it('backs off from the start again once the server that went away answers', async () => {
    const watchAt: number[] = [];
    handler = (req, res, url) => {
      if (url.pathname === '/ok') return json(res, 200, {});
      watchAt.push(Date.now());
      if (watchAt.length <= 3) return void req.socket.destroy();
      json(res, 503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' }); // still starting
    };
    const k = client();
    const stop = k.watch(
      '/w',
      { resourceVersion: '1', backoff: { initialMs: 100, maxMs: 100_000 } },
      () => {},
      () => {},
    );
    const deadline = Date.now() + 8000;
    while (watchAt.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await k.get('/ok'); // during the third backoff (~400 ms): the server is back
    const late = lateness();
    while (watchAt.length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    stop();
    k.close();
    expect(watchAt.length).toBe(5);
    // 80–120 ms, not the doubled 640–960 ms the outage had reached (this process's timers
    // running late on a busy machine aside).
    expect(watchAt[4]! - watchAt[3]! - late.ms()).toBeLessThan(400);
    late.stop();
  });

  it('while the server comes back (503s), 2xx answers cut five backoffs short, then it backs off', async () => {
    const watchAt: number[] = [];
    handler = (req, res, url) => {
      if (url.pathname === '/ok') return json(res, 200, {});
      watchAt.push(Date.now());
      if (watchAt.length === 1) return void req.socket.destroy();
      json(res, 503, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' }); // still starting
    };
    const k = client();
    const stop = k.watch(
      '/w',
      // Far longer than the 1.5 s below: a try after the early ones would be a bug, not load.
      { resourceVersion: '1', backoff: { initialMs: 10_000, maxMs: 10_000 } },
      () => {},
      () => {},
    );
    while (watchAt.length < 1) await new Promise((r) => setTimeout(r, 5));
    const t0 = Date.now();
    while (Date.now() - t0 < 1500) {
      await k.get('/ok'); // other requests of the client succeed meanwhile
      await new Promise((r) => setTimeout(r, 20));
    }
    stop();
    k.close();
    // The first try and five early ones; without the bound every 2xx would wake it.
    expect(watchAt.length).toBe(6);
  });
});
