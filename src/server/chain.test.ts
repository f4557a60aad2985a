// The chain's order (src/server/app.ts), through the real createApp over plain HTTP:
// probes answered before authentication, declared endpoints by exact path only (another
// case or a trailing slash is any unknown path, a 404 Status, as the API server answers),
// and authentication before the in-flight bounds.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allow } from '../admission/verdict.js';
import { validatingWebhook } from '../admission/webhook.js';
import { createLogger } from '../log.js';
import type { AppParts } from './app.js';
import { appOf } from '../../test/unit/app-of.js';

const log = createLogger('silent');
const hook = validatingWebhook({
  name: 'chain-test.example.com',
  match: { kinds: ['Pod'] },
  admit: () => allow(),
});
const servers: Server[] = [];

async function serve(parts: Partial<AppParts>): Promise<string> {
  const app = appOf({ log, webhooks: [hook], maxReviewBytesInFlight: 1 << 20, ...parts });
  const server = createServer(app.callback());
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
afterAll(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));

const review = JSON.stringify({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u1',
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    operation: 'CREATE',
    object: { metadata: { name: 'p' } },
  },
});
const post = (url: string) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: review });
const status = async (res: Response) =>
  [res.status, ((await res.json()) as { kind?: string; reason?: string }).reason] as const;

describe('the chain', () => {
  let open = '';
  let closed = '';
  beforeAll(async () => {
    open = await serve({});
    // No API server and no loopback trust: everything but probes and reviews is refused.
    closed = await serve({ trustLoopback: false, requireClientCert: true });
  });

  it('serves a review at its exact path only: another case or a trailing slash is a 404 Status', async () => {
    const ok = await post(`${open}/validate/chain-test.example.com`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ response: { uid: 'u1', allowed: true } });
    expect(await status(await post(`${open}/validate/chain-test.example.com/`))).toEqual([
      404,
      'NotFound',
    ]);
    expect(await status(await post(`${open}/validate/Chain-Test.example.com`))).toEqual([
      404,
      'NotFound',
    ]);
    expect(await status(await post(`${open}/validate/other`))).toEqual([404, 'NotFound']);
  });

  it('answers another method at a review path 405, before asking for a certificate', async () => {
    expect(await status(await fetch(`${open}/validate/chain-test.example.com`))).toEqual([
      405,
      'MethodNotAllowed',
    ]);
    expect(await status(await fetch(`${closed}/validate/chain-test.example.com`))).toEqual([
      405,
      'MethodNotAllowed',
    ]);
  });

  it('answers probes without authentication; the rest meets it', async () => {
    const live = await fetch(`${closed}/livez`);
    expect([live.status, await live.text()]).toEqual([200, 'ok']);
    expect(await status(await fetch(`${closed}/metrics`))).toEqual([403, 'Forbidden']);
    // A check that does not exist is an unknown path: it meets authentication too.
    expect(await status(await fetch(`${closed}/readyz/nope`))).toEqual([403, 'Forbidden']);
    expect(await status(await fetch(`${open}/readyz/nope`))).toEqual([404, 'NotFound']);
    // A review without the API server's certificate, where one is required.
    expect(await status(await post(`${closed}/validate/chain-test.example.com`))).toEqual([
      401,
      'Unauthorized',
    ]);
  });

  it('authenticates before the in-flight bound: a refused caller takes no slot', async () => {
    const bounded = await serve({
      trustLoopback: false,
      requireClientCert: true,
      maxInFlight: { review: 0, discovery: 0, watch: 0, requests: 0 },
    });
    // With every class at 0, a request that reached the bound would be a 429.
    expect(await status(await post(`${bounded}/validate/chain-test.example.com`))).toEqual([
      401,
      'Unauthorized',
    ]);
    expect(await status(await fetch(`${bounded}/metrics`))).toEqual([403, 'Forbidden']);
    const live = await fetch(`${bounded}/livez`);
    expect(live.status).toBe(200);
  });
});
