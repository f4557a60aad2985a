// Self-check of the webhook reference servers (issue 13): starts each one as the harness
// does (BENCH_PORT/BENCH_CERT/BENCH_KEY, `ready` on stdout), sends a valid, an invalid and
// two mutate reviews, and checks that every server's answers mean the same: uid echoed,
// allowed, status code 422 naming metadata.name, and a JSONPatch that, applied to the
// object, gives the object the contract's rules describe.
//
// CLI: node bench/webhook/servers/check.mjs [name ...]   (default: controller-runtime
// go-hand pepr); exits non-zero on any difference. Module: `checkServers(servers)`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { fileURLToPath } from 'node:url';
import jsonpatch from 'fast-json-patch';
import { freePort } from '../../net.mjs';
import { makeCerts } from '../certs.mjs';
import { buildServer } from './build.mjs';
import { deployment, expectedMutation, review } from './reviews.mjs';

/** The bench's ECDSA P-256 serving certificate (bench/webhook/certs.mjs), in `dir`. */
export const makeCert = (dir) => makeCerts(join(dir, 'certs'));

/** Starts one server; resolves once it printed `ready`. */
export async function startServer({ command, args = [], env = {} }, { cert, key }, { cpus } = {}) {
  const port = await freePort();
  const [cmd, argv] = cpus ? ['taskset', ['-c', cpus, command, ...args]] : [command, args];
  const child = spawn(cmd, argv, {
    env: { ...process.env, ...env, BENCH_PORT: String(port), BENCH_CERT: cert, BENCH_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
  await new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${command}: no 'ready' within 60 s\n${stderr}`)),
      60_000,
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.split('\n').includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.on('exit', (code) =>
      reject(new Error(`${command} exited (${code}) before ready\n${stderr}`)),
    );
  });
  child.stdout.resume();
  return { port, pid: child.pid, stop: () => child.kill('SIGKILL') };
}

export function post(port, path, body, agent) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      { host: '127.0.0.1', port, path, method: 'POST', agent, rejectUnauthorized: false },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }),
        );
      },
    );
    req.on('error', reject);
    req.setHeader('content-type', 'application/json');
    req.end(data);
  });
}

/**
 * Semantics only: null values and empty maps are what a typed Go round trip adds
 * (creationTimestamp: null, status: {}, strategy: {}), and Pepr always stamps
 * `<uuid>.pepr.dev/<capability>` annotations on what it mutates.
 */
function normalise(value) {
  if (Array.isArray(value)) return value.map(normalise);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    if (/^[0-9a-f-]{36}\.pepr\.dev\//.test(k)) continue;
    const n = normalise(v);
    if (n === null || (typeof n === 'object' && !Array.isArray(n) && Object.keys(n).length === 0))
      continue;
    out[k] = n;
  }
  return out;
}

const cases = [
  { name: 'valid', path: '/validate', object: deployment(), allowed: true },
  { name: 'invalid', path: '/validate', object: deployment({ name: 'Bench_App' }), allowed: false },
  { name: 'mutate', path: '/mutate', object: deployment() },
  { name: 'mutate-no-labels', path: '/mutate', object: deployment({ labels: null, kb: 5 }) },
];

/** @returns {string[]} the differences found for one server (empty: all good). */
async function checkOne(port) {
  const problems = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  for (const c of cases) {
    const sent = review(c.object);
    const { status, body } = await post(port, c.path, sent, agent);
    let answer;
    try {
      answer = JSON.parse(body).response;
    } catch {
      problems.push(`${c.name}: HTTP ${status}, not JSON: ${body.slice(0, 200)}`);
      continue;
    }
    const fail = (what) => problems.push(`${c.name}: ${what}`);
    if (status !== 200) fail(`HTTP status ${status}`);
    if (answer?.uid !== sent.request.uid) fail(`uid ${answer?.uid} instead of ${sent.request.uid}`);
    if (c.path === '/validate') {
      if (answer.allowed !== c.allowed) fail(`allowed ${answer.allowed}`);
      if (!c.allowed && answer.status?.code !== 422)
        fail(`status.code ${answer.status?.code} instead of 422`);
      if (!c.allowed && !answer.status?.message?.includes('metadata.name'))
        fail(`message does not name metadata.name: ${answer.status?.message}`);
      if (answer.patch) fail('a validation answer carries a patch');
      continue;
    }
    if (answer.allowed !== true) fail(`allowed ${answer.allowed}`);
    if (answer.patchType !== 'JSONPatch') fail(`patchType ${answer.patchType}`);
    let patch, patched;
    try {
      patch = JSON.parse(Buffer.from(answer.patch ?? '', 'base64').toString('utf8') || '[]');
      patched = jsonpatch.applyPatch(structuredClone(c.object), patch, true, false).newDocument;
    } catch (err) {
      fail(`the patch does not apply: ${err.message.split('\n')[0]}`);
      continue;
    }
    if (!isDeepStrictEqual(normalise(patched), normalise(expectedMutation(c.object))))
      fail(
        `the patched object differs from the expected one; patch: ${JSON.stringify(patch).slice(0, 600)}`,
      );
  }
  agent.destroy();
  return problems;
}

/** @param servers name → { command, args, env } @returns name → problems */
export async function checkServers(servers, log = (m) => console.error(m)) {
  const dir = mkdtempSync(join(tmpdir(), 'annex-bench-check-'));
  const results = {};
  try {
    const tls = await makeCert(dir);
    for (const [name, spec] of Object.entries(servers)) {
      const server = await startServer(spec, tls);
      try {
        results[name] = await checkOne(server.port);
      } finally {
        server.stop();
      }
      log(`${name}: ${results[name].length === 0 ? 'ok' : results[name].join('\n  ')}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return results;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const names = process.argv.slice(2).length
    ? process.argv.slice(2)
    : ['controller-runtime', 'go-hand', 'pepr'];
  const servers = Object.fromEntries(names.map((n) => [n, buildServer(n)]));
  const results = await checkServers(servers);
  const failed = Object.values(results).filter((p) => p.length > 0).length;
  console.log(`${names.length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
