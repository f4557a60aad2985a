// Memory under hostile reviews: RSS of the annex process (over TLS, the real server)
// for one, eight and sixteen concurrent AdmissionReviews whose Pod name is 6.5 MiB of
// invalid characters, the case where the API server's message repeats the name. Prints
// HTTP codes, response bytes, RSS before, peak RSS, and RSS 10 s later.
// Usage: npm run build && node bench/admission-memory.bench.mjs
import { fork } from 'node:child_process';
import { Agent, request } from 'node:https';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureCertificates } from '../dist/certs/index.js';
import { admissionReview, numberedUid, PODS } from './reviews.mjs';

const NAME_BYTES = 6.5 * 1024 * 1024;
const MB = (n) => `${(n / 1e6).toFixed(1)} MB`;

/** Review i: a Pod whose name is NAME_BYTES of invalid characters (bench/reviews.mjs). */
const review = (i) =>
  JSON.stringify(
    admissionReview(
      {
        metadata: { name: 'Web_'.repeat(NAME_BYTES / 4) },
        spec: { containers: [{ name: 'web', image: 'nginx' }] },
      },
      {
        uid: numberedUid(i, '00000000-0000-0000-0000-'),
        type: PODS,
        name: null,
        namespace: 'bench',
        userInfo: null,
        dryRun: null,
        full: false,
      },
    ),
  );

function post(agent, ca, port, body) {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/validate/names.annex.dev',
        method: 'POST',
        agent,
        ca,
        servername: 'localhost',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        answered = true;
        let bytes = 0;
        res.on('data', (c) => (bytes += c.length));
        res.on('end', () => resolve({ code: res.statusCode, bytes }));
      },
    );
    // A refusal (429) may come, and the socket close, while the 6.8 MB body is still being
    // written: the write then fails (EPIPE, ECONNRESET) after the answer, which is the result.
    // Without an answer the error is the result, printed in place of the code.
    let answered = false;
    req.on('error', (e) => {
      if (!answered) resolve({ code: e.code ?? e.message, bytes: 0 });
    });
    req.end(body);
  });
}

const dir = mkdtempSync(join(tmpdir(), 'annex-bench-'));
let child;
try {
  await ensureCertificates({ dir, service: 'annex', namespace: 'annex-system' });
  const ca = readFileSync(join(dir, 'ca.crt'));
  child = fork(join(import.meta.dirname, 'admission-server.mjs'), ['annex', dir], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const { port } = await new Promise((r) => child.once('message', r));
  const rss = () =>
    new Promise((r) => {
      child.once('message', r);
      child.send('rss');
    });
  const bodies = Array.from({ length: 16 }, (_, i) => review(i));
  // 16 at once exceed the default 64 MiB in flight: the excess is refused with 429.
  for (const n of [1, 8, 16]) {
    await sleep(2000);
    const before = (await rss()).rss;
    const agent = new Agent({ keepAlive: true, maxSockets: 8 });
    const answers = await Promise.all(bodies.slice(0, n).map((b) => post(agent, ca, port, b)));
    const { peakRss } = await rss();
    agent.destroy();
    await sleep(10_000);
    const after = (await rss()).rss;
    const codes = answers.map((a) => a.code).join(',');
    const bytes = answers.map((a) => MB(a.bytes)).join(',');
    console.log(
      `${n}x ${MB(NAME_BYTES)} name: HTTP ${codes}; response ${bytes}; RSS before ${MB(before)}, peak ${MB(peakRss)}, 10 s later ${MB(after)}`,
    );
  }
} finally {
  child?.kill(); // also when the bench throws: no annex left running
  rmSync(dir, { recursive: true, force: true });
}
