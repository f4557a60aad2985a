// The load generator, a child process pinned to its own core (bench/webhook/run.mjs).
// Raw HTTP/1.1 over keep-alive TLS, one request in flight per connection, as the API
// server's webhook client does. Two modes:
// - closed loop (saturation): every connection sends its next review when the last is
//   answered; throughput is answered reviews per second;
// - open loop (fixed rate): review i is due at start + i/rate whatever happened before;
//   a due review waits for a free connection, and its latency runs from the time it was
//   due, so a stalled server is charged for every review it held up (no coordinated
//   omission). The pacer spins on setImmediate: timers (≥ 1 ms) would add their own lag.
// Closed-loop windows may stretch (minCpuMs, maxDurationMs) so that the CPU figure rests
// on enough clock ticks. It reads the server's CPU (/proc/PID/stat utime+stime) and RSS at the window's edges,
// and counts TLS handshakes it had to make inside the window (0 on a steady keep-alive run).
// Why not autocannon/wrk/hey: none measures an open loop from the scheduled send time on
// a fixed set of connections (see docs/bench/README.md, "Method").
import { readFileSync } from 'node:fs';
import { connect } from 'node:tls';
import { performance } from 'node:perf_hooks';

const TICKS_PER_SECOND = Number(process.env.BENCH_CLK_TCK ?? 100);
const CRLF2 = Buffer.from('\r\n\r\n');

export function serverCpuMicros(pid) {
  // Fields after the ")" of the command name: state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1e6) / TICKS_PER_SECOND;
}

export function rssKiB(pid) {
  const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : NaN;
}

/** Parses one HTTP/1.1 response at the start of `buf`: [status, bytes used] or null if incomplete. */
export function parseResponse(buf) {
  const end = buf.indexOf(CRLF2);
  if (end < 0) return null;
  const head = buf.toString('latin1', 0, end);
  const status = Number(head.slice(9, 12));
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  const start = end + 4;
  if (length) {
    const total = start + Number(length[1]);
    return buf.length >= total ? [status, total, /\r\nconnection:\s*close/i.test(head)] : null;
  }
  if (!/\r\ntransfer-encoding:\s*chunked/i.test(head)) return [status, start, true];
  let at = start;
  for (;;) {
    const line = buf.indexOf('\r\n', at);
    if (line < 0) return null;
    const size = parseInt(buf.toString('latin1', at, line), 16);
    at = line + 2 + size + 2;
    if (buf.length < at) return null;
    if (size === 0) return [status, at, /\r\nconnection:\s*close/i.test(head)];
  }
}

class Connection {
  constructor(pool) {
    this.pool = pool;
    this.busy = false;
    this.dead = false;
    this.buf = Buffer.alloc(0);
    this.socket = connect({
      host: '127.0.0.1',
      port: pool.port,
      ca: pool.ca,
      servername: 'localhost',
      ALPNProtocols: ['http/1.1'],
    });
    this.socket.setNoDelay(true);
    this.ready = new Promise((resolve, reject) => {
      this.socket.once('secureConnect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', () => this.fail());
    this.socket.on('close', () => this.fail());
  }

  send(bytes, done) {
    this.busy = true;
    this.done = done;
    this.socket.write(bytes);
  }

  onData(chunk) {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const parsed = parseResponse(this.buf);
    if (!parsed) return;
    const [status, used, close] = parsed;
    this.buf = this.buf.subarray(used);
    this.busy = false;
    const done = this.done;
    this.done = undefined;
    if (close) this.fail(true);
    done?.(status);
  }

  fail(quiet = false) {
    if (this.dead) return;
    this.dead = true;
    this.socket.destroy();
    const done = this.done;
    this.done = undefined;
    if (!quiet) done?.(0);
  }
}

class Pool {
  constructor(port, ca) {
    this.port = port;
    this.ca = ca;
    this.conns = [];
    this.handshakes = 0;
  }

  /** `n` live connections; dead ones are replaced (and counted). */
  async ensure(n) {
    this.conns = this.conns.filter((c) => !c.dead);
    while (this.conns.length < n) this.add();
    await Promise.all(this.conns.map((c) => c.ready));
  }

  add() {
    const c = new Connection(this);
    this.handshakes++;
    this.conns.push(c);
    return c;
  }

  /** An idle live connection, or a new one when one died (the API server would redial). */
  idle(n) {
    let live = 0;
    for (const c of this.conns) {
      if (c.dead) continue;
      live++;
      if (!c.busy) return c;
    }
    if (live < n) {
      this.conns = this.conns.filter((c) => !c.dead);
      return this.add();
    }
    return undefined;
  }
}

const pools = new Map();

function requestBytes(port, path, body) {
  const b = Buffer.from(body);
  return Buffer.concat([
    Buffer.from(
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, */*\r\nUser-Agent: annex-bench\r\nContent-Length: ${b.length}\r\n\r\n`,
    ),
    b,
  ]);
}

export function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/**
 * One measurement. job: { port, ca, path, bodies, pid, connections, mode: 'closed'|'open',
 * rate?, warmupMs, durationMs, drainMs? }.
 */
export async function runJob(job) {
  const key = `${job.port}`;
  if (!pools.has(key)) pools.set(key, new Pool(job.port, job.ca));
  const pool = pools.get(key);
  await pool.ensure(job.connections);
  const requests = job.bodies.map((b) => requestBytes(job.port, job.path, b));
  let next = 0;
  const payload = () => requests[next++ % requests.length];

  const lat = [];
  let errors = 0;
  const statuses = {}; // failed answers by HTTP status (0: connection lost)
  let completed = 0;
  let inFlight = 0;
  const t0 = performance.now();
  const warmEnd = t0 + job.warmupMs;
  const end = warmEnd + job.durationMs;
  let window = null; // { t, cpu, client, handshakes }
  const openWindow = () => {
    window = {
      t: performance.now(),
      cpu: serverCpuMicros(job.pid),
      client: process.cpuUsage(),
      handshakes: pool.handshakes,
    };
  };
  let closed = null;
  const closeWindow = () => {
    const t = performance.now();
    closed = {
      ms: t - window.t,
      cpu: serverCpuMicros(job.pid) - window.cpu,
      client: process.cpuUsage(window.client),
      handshakes: pool.handshakes - window.handshakes,
      rss: rssKiB(job.pid),
      completed,
    };
  };

  await new Promise((resolve) => {
    const finishIfIdle = () => {
      if (closed && inFlight === 0 && (job.mode === 'closed' || queue.length === 0)) resolve();
    };
    const queue = []; // open loop: due times waiting for a connection
    const dispatch = (conn, due) => {
      inFlight++;
      const sent = performance.now();
      conn.send(payload(), (status) => {
        inFlight--;
        const now = performance.now();
        if (window && !closed) completed++;
        const timed =
          job.mode === 'open'
            ? window && due >= window.t && due < end
            : window && !closed && sent >= window.t;
        if (timed) {
          if (status === 200) lat.push(now - due);
          else {
            errors++;
            statuses[status] = (statuses[status] ?? 0) + 1;
          }
        }
        if (job.mode === 'closed') {
          if (!closed) dispatchClosed();
        } else if (queue.length) {
          const c = pool.idle(job.connections);
          if (c) dispatch(c, queue.shift());
        }
        finishIfIdle();
      });
    };
    const dispatchClosed = () => {
      const c = pool.idle(job.connections);
      if (c) dispatch(c, performance.now());
    };
    if (job.mode === 'closed') {
      setTimeout(openWindow, job.warmupMs);
      // A window too short for the clock ticks (a server that got little of its core, on a
      // shared machine) is extended up to maxDurationMs until it holds minCpuMs of CPU.
      const cpuEnough = () =>
        serverCpuMicros(job.pid) - window.cpu >= (job.minCpuMs ?? 0) * 1000 ||
        performance.now() - window.t >= (job.maxDurationMs ?? job.durationMs);
      const tryClose = () => {
        if (!cpuEnough()) return setTimeout(tryClose, 50);
        closeWindow();
        finishIfIdle();
      };
      setTimeout(tryClose, job.warmupMs + job.durationMs);
      for (let i = 0; i < job.connections; i++) dispatchClosed();
      return;
    }
    // Open loop: due times on a fixed grid from t0.
    const interval = 1000 / job.rate;
    let i = 0;
    const drainUntil = end + (job.drainMs ?? 3000);
    const pace = () => {
      const now = performance.now();
      if (!window && now >= warmEnd) openWindow();
      for (let due = t0 + i * interval; due <= now && due < end; due = t0 + ++i * interval) {
        const c = queue.length ? undefined : pool.idle(job.connections);
        if (c) dispatch(c, due);
        else queue.push(due);
      }
      if (now < end) return setImmediate(pace);
      if (!closed) closeWindow();
      // Reviews still queued or in flight when the drain budget ends: charged up to now.
      if (now >= drainUntil) {
        for (const due of queue) if (due >= window.t) lat.push(now - due);
        errors += queue.length;
        if (queue.length) statuses.unanswered = queue.length;
        queue.length = 0;
        return resolve();
      }
      if (queue.length || inFlight) setTimeout(pace, 5);
      else resolve();
    };
    pace();
  });

  lat.sort((a, b) => a - b);
  const clientMicros = closed.client.user + closed.client.system;
  return {
    completed: closed.completed,
    errors,
    statuses,
    windowMs: closed.ms,
    throughput: (closed.completed * 1000) / closed.ms,
    // No tick at all: below the clock's resolution (or the server got no CPU), not free.
    cpuMicrosPerRequest: closed.completed && closed.cpu > 0 ? closed.cpu / closed.completed : NaN,
    serverCpuPercent: (closed.cpu / (closed.ms * 1000)) * 100,
    clientCpuPercent: (clientMicros / (closed.ms * 1000)) * 100,
    newConnections: closed.handshakes,
    rssKiB: closed.rss,
    p50: percentile(lat, 0.5),
    p90: percentile(lat, 0.9),
    p99: percentile(lat, 0.99),
    p999: percentile(lat, 0.999),
    max: lat.length ? lat[lat.length - 1] : NaN,
    samples: lat.length,
  };
}

if (process.send) {
  process.on('message', async (m) => {
    try {
      if (m.type === 'run') process.send({ type: 'result', result: await runJob(m.job) });
      if (m.type === 'close') {
        for (const p of pools.values()) for (const c of p.conns) c.fail(true);
        pools.clear();
        process.send({ type: 'closed' });
      }
    } catch (e) {
      process.send({ type: 'error', message: e.message });
    }
  });
  process.send({ type: 'up' });
}
