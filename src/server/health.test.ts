import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { health, type Readiness } from './health.js';

let checks: ReturnType<Readiness> = [];
let server: Server;
let base = '';
beforeAll(async () => {
  const app = new Koa();
  app.use(health(() => checks));
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = 'next';
  });
  server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const get = async (path: string) => {
  const res = await fetch(`${base}${path}`);
  return [res.status, await res.text()];
};

describe('health', () => {
  it('/readyz is the conjunction of the checks, and says which failed', async () => {
    checks = [
      ['names', true],
      ['metrics', true],
    ];
    expect(await get('/readyz')).toEqual([200, 'ok']);
    checks = [
      ['names', true],
      ['metrics', 'no node and pod metrics collected yet'],
    ];
    expect(await get('/readyz')).toEqual([
      503,
      '[+]ping ok\n[+]names ok\n[-]metrics failed: no node and pod metrics collected yet\nreadyz check failed\n',
    ]);
    // Liveness does not depend on readiness.
    expect(await get('/livez')).toEqual([200, 'ok']);
  });

  it('?verbose lists every check; /readyz/<name> asks one', async () => {
    checks = [
      ['names', true],
      ['metrics', 'waiting'],
    ];
    expect(await get('/readyz/names')).toEqual([200, 'ok']);
    expect((await get('/readyz/metrics'))[0]).toBe(503);
    expect(await get('/readyz/nothing')).toEqual([404, 'next']);
    checks = [['names', true]];
    expect(await get('/readyz?verbose')).toEqual([
      200,
      '[+]ping ok\n[+]names ok\nreadyz check passed\n',
    ]);
    expect(await get('/livez?verbose')).toEqual([200, '[+]ping ok\nlivez check passed\n']);
  });

  it('a passing check with a note keeps the [+]name ok prefix, the note after ": "; never a failure', async () => {
    checks = [
      ['names', true],
      ['admission-callers', true, '3 authenticated (last 1s ago), 0 unauthenticated'],
    ];
    expect(await get('/readyz')).toEqual([200, 'ok']);
    expect(await get('/readyz?verbose')).toEqual([
      200,
      '[+]ping ok\n[+]names ok\n[+]admission-callers ok: 3 authenticated (last 1s ago), 0 unauthenticated\nreadyz check passed\n',
    ]);
    expect(await get('/readyz/admission-callers')).toEqual([200, 'ok']);
  });
});
