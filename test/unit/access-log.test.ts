// The access log records the status code that went on the wire, whoever decided it: a
// Status thrown below (415, 413, 404), the overload bound (429), the connection layer's
// HTTP/2 body deadline (408), or nobody, when the client left before the answer (0).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import {
  h2Connect,
  h2Request,
  readResponse,
  sleep,
  start,
  tlsConnect,
  useHostileServer,
} from './hostile-net.js';

useHostileServer();

function capture() {
  const stream = new PassThrough();
  const lines: { path: string; code: number; method: string }[] = [];
  let text = '';
  stream.on('data', (d: Buffer) => {
    text += d.toString();
    let i;
    while ((i = text.indexOf('\n')) >= 0) {
      const line = JSON.parse(text.slice(0, i));
      text = text.slice(i + 1);
      if (line.msg === 'request') lines.push(line);
    }
  });
  return { log: createLogger('debug', stream), lines };
}

const codeOf = async (lines: { path: string; code: number }[], path: string) => {
  for (let i = 0; i < 50; i++) {
    const l = lines.find((x) => x.path === path);
    if (l) return l.code;
    await sleep(50);
  }
  return undefined;
};

describe('the access log', () => {
  it('records the code sent, not the one Koa held when the middleware returned', async () => {
    const { log, lines } = capture();
    const l = await start(
      { requestTimeoutSeconds: 1 },
      { log, maxInFlight: { review: 10, discovery: 10, watch: 10, requests: 1 } },
    );
    const s = await h2Connect(l);
    // A Status thrown below the log: 415 for a text body.
    const r415 = await h2Request(
      s,
      { ':method': 'POST', ':path': '/validate/names.annex.dev', 'content-type': 'text/plain' },
      'x',
    );
    expect(r415.status).toBe(415);
    expect(await codeOf(lines, '/validate/names.annex.dev')).toBe(415);
    // 413 before the body is read.
    const t = await tlsConnect(l, ['http/1.1']);
    t.write(
      'POST /mutate/defaults.annex.dev HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n' +
        `Content-Length: ${64 * 1024 * 1024}\r\n\r\n{`,
    );
    const r413 = await readResponse(t);
    expect(r413.status).toBe(413);
    expect(await codeOf(lines, '/mutate/defaults.annex.dev')).toBe(413);
    // 404 for an unknown path.
    expect((await h2Request(s, { ':path': '/nowhere' })).status).toBe(404);
    expect(await codeOf(lines, '/nowhere')).toBe(404);
    // 429 from the in-flight bound.
    const slow = h2Request(s, { ':path': '/slow?ms=600' });
    await sleep(100);
    expect((await h2Request(s, { ':path': '/slow-too?ms=1' })).status).toBe(429);
    expect(await codeOf(lines, '/slow-too')).toBe(429);
    await slow;
    // 408 written by the connection layer to a stalled HTTP/2 body.
    const stalled = s.request({ ':method': 'POST', ':path': '/echo' }, { endStream: false });
    stalled.on('error', () => {});
    stalled.write('x');
    const got = await new Promise<number>((resolve) =>
      stalled.on('response', (h) => resolve(Number(h[':status']))),
    );
    expect(got).toBe(408);
    const c408 = await codeOf(lines, '/echo');
    expect(c408).toBe(408);
    // The client leaves before the answer: nothing was sent.
    const gone = s.request({ ':path': '/slow-gone?ms=400' });
    gone.on('error', () => {});
    await sleep(100);
    gone.close();
    expect(await codeOf(lines, '/slow-gone')).toBe(0);
  }, 20_000);
});
