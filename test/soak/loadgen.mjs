// An open-loop HTTPS load generator for AdmissionReview POSTs, as the kube-apiserver's
// webhook client sends them: HTTP/1.1 keep-alive over TLS, a bounded connection pool,
// one request in flight per connection, `?timeout=` on the path. Requests are scheduled
// at a fixed rate whatever the server does (latency counts from the scheduled instant,
// so a stalled server shows as latency, not as a lower rate), and every answer is
// checked: status 200, the request's uid, the expected decision, a JSON patch where one
// is due. Anything else is an error, counted and described.
//
// A small HTTP/1.1 client of its own rather than node:https: the generator must cost
// less CPU than the server it loads (two cores hold both), and node:https's
// ClientRequest/Agent machinery costs several times the bytes it moves.
//
// Optional readiness routing (`readyz: true`): the targets are polled on /readyz as a
// load balancer probes endpoints, and requests go to the first target that is ready;
// connections to a target that turned unready are closed once idle and reopened to a
// ready one, while requests in flight on them finish.
//
// Run as a child (fork) it takes its options from the first IPC message and sends
// { type: 'started' } when its clock starts, { type: 'window' } per window and
// { type: 'done' } at the end; see test/soak/*.ts.
import { request } from 'node:https';
import tls from 'node:tls';

const CRLF2 = Buffer.from('\r\n\r\n');
const UID_DIGITS = 12;

/**
 * @typedef {{ host: string, port: number }} Target
 * @typedef {{ path: string, pre: string, post: string, expect: 'allowed' | 'denied' | 'patched', weight?: number }} Template
 * @typedef {{
 *   targets: Target[], ca: string, servername?: string, connections: number, rate: number,
 *   durationMs: number, windowMs: number, templates: Template[], timeoutMs?: number,
 *   readyz?: boolean, readyzIntervalMs?: number, uidPrefix?: string,
 * }} LoadOptions
 */

/** Sorted-copy percentile of the latencies (ms) in a window. */
function percentile(sorted, p) {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Checks one answer against what its template expects; returns an error text or null. */
function check(status, body, uid, expect) {
  if (status !== 200) return `status ${status}: ${body.slice(0, 160)}`;
  let review;
  try {
    review = JSON.parse(body);
  } catch {
    return `not JSON: ${body.slice(0, 80)}`;
  }
  const r = review?.response;
  if (review?.kind !== 'AdmissionReview' || !r) return 'not an AdmissionReview response';
  if (r.uid !== uid) return `uid ${r.uid} for ${uid}`;
  if (expect === 'denied') {
    if (r.allowed !== false || r.status?.code !== 422) return `expected a 422 denial`;
    return null;
  }
  if (r.allowed !== true) return `denied: ${r.status?.message ?? ''}`.slice(0, 160);
  if (expect === 'patched') {
    if (r.patchType !== 'JSONPatch' || typeof r.patch !== 'string') return 'no JSONPatch';
    const ops = JSON.parse(Buffer.from(r.patch, 'base64').toString('utf8'));
    if (!Array.isArray(ops) || ops.length === 0) return 'empty patch';
  }
  return null;
}

/** GET /readyz once; resolves with the status, 0 for no answer within a second. */
function probe(target, ca, servername) {
  return new Promise((resolve) => {
    const req = request(
      { host: target.host, port: target.port, path: '/readyz', ca, servername, agent: false },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.setTimeout(1000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end();
  });
}

/**
 * Runs the load; `onWindow` receives each window's figures as it closes.
 * @param {LoadOptions} o
 */
export async function runLoad(o, onWindow = () => {}, onStart = () => {}) {
  const servername = o.servername ?? 'localhost';
  const timeoutMs = o.timeoutMs ?? 10_000;
  const uidPrefix = o.uidPrefix ?? 'soak';
  // Each template as header+prefix, and suffix, around a fixed-width uid.
  const uidLen = uidPrefix.length + 1 + UID_DIGITS;
  const kinds = o.templates.map((t) => {
    const pre = Buffer.from(t.pre);
    const post = Buffer.from(t.post);
    const head = Buffer.from(
      `POST ${t.path}?timeout=10s HTTP/1.1\r\nHost: ${servername}\r\n` +
        `Content-Type: application/json\r\nAccept: application/json, */*\r\n` +
        `Content-Length: ${pre.length + uidLen + post.length}\r\n\r\n`,
    );
    return { head: Buffer.concat([head, pre]), post, expect: t.expect, weight: t.weight ?? 1 };
  });
  // A fixed rotation of the templates by weight: deterministic mix.
  const rotation = kinds.flatMap((k) => Array(k.weight).fill(k));

  const ready = o.targets.map(() => true);
  // The first ready target; with none ready (a loaded machine missing probes), the last
  // choice stands rather than flipping back to a target that went away.
  let chosen = 0;
  const preferred = () => {
    const i = ready.indexOf(true);
    if (i >= 0) chosen = i;
    return chosen;
  };

  const totals = {
    sent: 0,
    ok: 0,
    errors: 0,
    connects: 0,
    failedConnects: 0,
    byTarget: o.targets.map(() => 0),
  };
  /** First few error texts, with counts. */
  const errorKinds = new Map();
  let win = newWindow(0);
  const windows = [];
  function newWindow(index) {
    return { index, latencies: [], ok: 0, errors: 0, maxBacklog: 0 };
  }
  function fail(text) {
    totals.errors++;
    win.errors++;
    const key = text.replace(/\d+/g, 'N').slice(0, 120);
    errorKinds.set(key, (errorKinds.get(key) ?? 0) + 1);
  }

  /** Requests due but not yet sent: their scheduled instants (ms, performance.now()). */
  const queue = [];
  let queueHead = 0;
  const conns = new Set();
  let seq = 0;
  let stopping = false;

  function connect() {
    const target = preferred();
    totals.connects++;
    const socket = tls.connect({
      host: o.targets[target].host,
      port: o.targets[target].port,
      ca: o.ca,
      servername,
      ALPNProtocols: ['http/1.1'],
    });
    socket.setNoDelay(true);
    const c = {
      socket,
      target,
      ready: false,
      everReady: false,
      inflight: null,
      buf: [],
      bufLen: 0,
    };
    conns.add(c);
    socket.on('secureConnect', () => {
      c.ready = true;
      c.everReady = true;
      pump();
    });
    socket.on('data', (d) => onData(c, d));
    socket.on('error', () => {});
    socket.on('close', () => {
      conns.delete(c);
      if (c.inflight) {
        clearTimeout(c.inflight.timer);
        fail(`connection closed with a request in flight (target ${c.target})`);
        c.inflight = null;
      }
      if (stopping) return;
      // A connection that never came up (refused, handshake failed) is retried after a pause.
      if (c.everReady) connect();
      else {
        totals.failedConnects++;
        setTimeout(() => !stopping && connect(), 50);
      }
    });
  }

  function send(c, scheduled) {
    const k = rotation[seq % rotation.length];
    const uid = `${uidPrefix}-${String(seq).padStart(UID_DIGITS, '0')}`;
    seq++;
    totals.sent++;
    totals.byTarget[c.target]++;
    c.inflight = {
      uid,
      expect: k.expect,
      scheduled,
      timer: setTimeout(() => {
        fail(`no answer within ${timeoutMs} ms`);
        c.inflight = null;
        c.socket.destroy();
      }, timeoutMs),
    };
    c.socket.write(Buffer.concat([k.head, Buffer.from(uid), k.post]));
  }

  function onData(c, d) {
    c.buf.push(d);
    c.bufLen += d.length;
    const all = c.buf.length === 1 ? c.buf[0] : Buffer.concat(c.buf, c.bufLen);
    c.buf = [all];
    const end = all.indexOf(CRLF2);
    if (end < 0) return;
    const head = all.subarray(0, end).toString('latin1');
    const m = /^HTTP\/1\.1 (\d{3})/.exec(head);
    const len = /\r\ncontent-length: *(\d+)/i.exec(head);
    if (!m || !len) {
      fail(`unframed answer: ${head.slice(0, 80)}`);
      if (c.inflight) clearTimeout(c.inflight.timer);
      c.inflight = null;
      return void c.socket.destroy();
    }
    const total = end + 4 + Number(len[1]);
    if (all.length < total) return;
    const body = all.subarray(end + 4, total).toString('utf8');
    c.buf = [];
    c.bufLen = 0;
    const r = c.inflight;
    c.inflight = null;
    if (!r) return void fail('an answer nobody asked for');
    clearTimeout(r.timer);
    const err = check(Number(m[1]), body, r.uid, r.expect);
    if (err) fail(err);
    else {
      totals.ok++;
      win.ok++;
      win.latencies.push(performance.now() - r.scheduled);
    }
    // Connection: close, or a target the balancer moved away from: reopen elsewhere.
    if (/\r\nconnection: *close/i.test(head) || (o.readyz && c.target !== preferred())) {
      c.ready = false;
      c.socket.end();
      return;
    }
    pump();
  }

  function pump() {
    const want = preferred();
    for (const c of conns) {
      if (queueHead >= queue.length) break;
      if (!c.ready || c.inflight) continue;
      if (o.readyz && c.target !== want) {
        // Idle on an unready target: close; 'close' reconnects to a ready one.
        c.ready = false;
        c.socket.end();
        continue;
      }
      send(c, queue[queueHead++]);
    }
    if (queueHead > 4096 && queueHead * 2 > queue.length) {
      queue.splice(0, queueHead);
      queueHead = 0;
    }
  }

  for (let i = 0; i < o.connections; i++) connect();

  let probing = null;
  if (o.readyz) {
    const interval = o.readyzIntervalMs ?? 100;
    // An answer other than 200 takes a target out at once; silence only three times running
    // (a loaded machine may miss one probe's deadline).
    const silent = o.targets.map(() => 0);
    probing = setInterval(() => {
      o.targets.forEach((t, i) =>
        probe(t, o.ca, servername).then((status) => {
          silent[i] = status === 0 ? silent[i] + 1 : 0;
          if (status === 200) ready[i] = true;
          else if (status !== 0 || silent[i] >= 3) ready[i] = false;
        }),
      );
    }, interval);
  }

  // Wait for the pool to be up before the clock starts.
  for (let i = 0; i < 200 && [...conns].some((c) => !c.ready); i++)
    await new Promise((r) => setTimeout(r, 10));

  const start = performance.now();
  onStart();
  let scheduled = 0;
  const cpu0 = process.cpuUsage();
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const elapsed = now - start;
      const due = Math.min(
        Math.floor((elapsed * o.rate) / 1000),
        Math.floor((o.durationMs * o.rate) / 1000),
      );
      for (; scheduled < due; scheduled++) queue.push(start + (scheduled * 1000) / o.rate);
      win.maxBacklog = Math.max(win.maxBacklog, queue.length - queueHead);
      pump();
      const w = Math.floor(elapsed / o.windowMs);
      if (w > win.index || elapsed >= o.durationMs) closeWindow();
      if (elapsed >= o.durationMs) return resolve();
      setTimeout(tick, 1);
    };
    tick();
  });
  // Let the last answers arrive (bounded by the request timeout).
  const drainUntil = performance.now() + timeoutMs + 1000;
  while (performance.now() < drainUntil && (queueHead < queue.length || busy()))
    await new Promise((r) => setTimeout(r, 10));
  const unsent = queue.length - queueHead;
  stopping = true;
  if (probing) clearInterval(probing);
  for (const c of conns) c.socket.destroy();
  closeWindow();
  const cpu = process.cpuUsage(cpu0);
  return {
    ...totals,
    unsent,
    errorKinds: Object.fromEntries([...errorKinds].slice(0, 20)),
    windows,
    seconds: (performance.now() - start) / 1000,
    generatorCpuSeconds: (cpu.user + cpu.system) / 1e6,
  };

  function busy() {
    for (const c of conns) if (c.inflight) return true;
    return false;
  }

  function closeWindow() {
    if (win.ok + win.errors === 0 && windows.length > 0) return;
    const sorted = Float64Array.from(win.latencies).sort();
    const w = {
      index: win.index,
      ok: win.ok,
      errors: win.errors,
      p50: percentile(sorted, 50),
      p99: percentile(sorted, 99),
      max: sorted.length ? sorted[sorted.length - 1] : 0,
      maxBacklog: win.maxBacklog,
    };
    windows.push(w);
    onWindow(w);
    win = newWindow(win.index + 1);
  }
}

// As a forked child: options in, figures out.
if (process.send && process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  process.once('message', async (opts) => {
    const result = await runLoad(
      opts,
      (w) => process.send({ type: 'window', window: w }),
      () => process.send({ type: 'started' }),
    );
    process.send({ type: 'done', result }, () => process.exit(0));
  });
}
