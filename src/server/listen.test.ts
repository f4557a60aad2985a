import { request, Agent } from 'node:https';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCertificates } from '../certs/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listen, type Listening } from './listen.js';

let l: Listening;
let ca: string;
let dir: string;
let connections = 0;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'annex-listen-'));
  const c = await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  ca = c.caPem;
  const app = new Koa();
  app.use((ctx) => {
    ctx.body = { proto: ctx.req.httpVersion };
  });
  l = await listen(app, {
    host: '127.0.0.1',
    port: 0,
    keepAliveTimeoutSeconds: 100,
    tls: { cert: c.certPem, key: c.keyPem },
  });
  l.server.on('secureConnection', () => connections++);
});
afterAll(async () => {
  await l.close();
  rmSync(dir, { recursive: true, force: true });
});

const get = (agent: Agent) =>
  new Promise<string>((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: l.port, path: '/', ca, servername: 'localhost', agent },
      (res) => {
        let b = '';
        res.on('data', (d) => (b += d));
        res.on('end', () => resolve(b));
      },
    );
    req.on('error', reject);
    req.end();
  });

describe('listen', () => {
  // The API server keeps idle webhook connections for 90 s and must never reuse one annex
  // has closed: annex closes idle HTTP/1.1 sockets only after keepAliveTimeoutSeconds.
  // (Run with keepAliveTimeoutSeconds: 2, this test fails: the setting is what holds.)
  it('keeps an idle HTTP/1.1 connection open for keepAliveTimeoutSeconds', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(JSON.parse(await get(agent))).toEqual({ proto: '1.1' });
    const before = connections;
    await new Promise((r) => setTimeout(r, 6000));
    await get(agent);
    expect(connections).toBe(before); // same socket reused
    agent.destroy();
  }, 15_000);
});
