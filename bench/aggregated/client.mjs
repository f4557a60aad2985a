// What the aggregated-API bench measures with: requests over HTTP/1.1 keep-alive and over one
// HTTP/2 session, watches on an HTTP/2 session, and process CPU from /proc.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import { request } from 'node:https';
import { performance } from 'node:perf_hooks';

const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** utime + stime of a process (all its threads), ms. */
export function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/**
 * One request; resolves once the last byte is in. `tls` holds the https options (agent, ca,
 * cert, key, servername) or `session` an open HTTP/2 session.
 */
export function send(target, { method = 'GET', path = target.path, headers = {}, body } = {}) {
  const h = { ...target.headers, ...headers };
  if (target.session) {
    return new Promise((resolve, reject) => {
      const stream = target.session.request({ ':method': method, ':path': path, ...h });
      const chunks = [];
      let status = 0;
      stream.on('response', (r) => (status = r[':status']));
      stream.on('data', (c) => chunks.push(c));
      stream.on('end', () => resolve({ status, body: Buffer.concat(chunks) }));
      stream.on('error', reject);
      stream.end(body);
    });
  }
  return new Promise((resolve, reject) => {
    const req = request(`${target.base}${path}`, { ...target.tls, method, headers: h }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** An HTTP/2 session with windows large enough that flow control does not pace a 5 MB body. */
export function h2session(base, tls) {
  const session = http2.connect(base, {
    ...tls,
    settings: { initialWindowSize: 16 << 20 },
  });
  session.on('connect', () => {
    if (!session.destroyed) session.setLocalWindowSize(64 << 20);
  });
  session.on('error', (e) => console.error(`http2 ${base}: ${e.message}`));
  session.on('goaway', (code) => console.error(`http2 ${base}: GOAWAY ${code}`));
  return session;
}

/**
 * `n` watches of `path` on one HTTP/2 session; resolves once every one has its response
 * headers. `next(match)` resolves with the epoch ms (fractional) at which the last of them
 * received a line containing `match`.
 */
export async function watchers(session, path, headers, n) {
  const waiting = [];
  let started = 0;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`watch ${path}: ${started}/${n} answered in 30 s`)),
      30_000,
    );
  });
  const all = Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise((resolve, reject) => {
          const w = { buf: '', lines: [] };
          const stream = session.request({ ':path': path, ...headers });
          stream.setEncoding('utf8');
          stream.on('response', (h) => {
            if (h[':status'] !== 200) reject(new Error(`watch ${path}: ${h[':status']}`));
            else {
              started++;
              resolve(w);
            }
          });
          stream.on('data', (c) => {
            const at = performance.timeOrigin + performance.now();
            w.buf += c;
            let nl;
            while ((nl = w.buf.indexOf('\n')) >= 0) {
              const line = w.buf.slice(0, nl);
              w.buf = w.buf.slice(nl + 1);
              for (const x of waiting) x.see(w, line, at);
            }
          });
          stream.on('error', reject);
          w.stream = stream;
        }),
    ),
  );
  const streams = await Promise.race([all, timeout]).finally(() => clearTimeout(timer));
  return {
    next(match) {
      return new Promise((resolve, reject) => {
        const seen = new Set();
        let last = 0;
        const x = {
          see(w, line, at) {
            if (!line.includes(match) || seen.has(w)) return;
            seen.add(w);
            last = Math.max(last, at);
            if (seen.size === n) done(null);
          },
        };
        const timer = setTimeout(
          () => done(new Error(`only ${seen.size}/${n} watchers saw ${match}`)),
          30_000,
        );
        const done = (err) => {
          clearTimeout(timer);
          waiting.splice(waiting.indexOf(x), 1);
          if (err) reject(err);
          else resolve(last);
        };
        waiting.push(x);
      });
    },
    close() {
      for (const w of streams) w.stream.close();
    },
  };
}
