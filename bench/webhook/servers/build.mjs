// Builds the webhook bench's reference servers once and reuses them (issue 13):
// - `controller-runtime` (B) and `go-hand` (B′): `go build -trimpath` of the pinned module
//   under bench/webhook/servers/<name>/ into <cacheDir>/bin/<name>-<hash>, the hash taken
//   over its main.go, go.mod, go.sum, the Go version and GOEXPERIMENT; the module cache is
//   Go's own.
// - `pepr` (C): `npm ci` of the pinned pepr/package-lock.json into <cacheDir>/pepr-<version>/
//   (Pepr is no dependency of annex).
// CLI: `node bench/webhook/servers/build.mjs <name>` prints the binary (Go) or the install
// directory (pepr) on stdout, progress on stderr. Modules: `buildServer(name, opts)`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const goServers = ['controller-runtime', 'go-hand'];
// B′ is built with Go 1.26's JSON v2 experiment, which puts encoding/json on the v2 decoder:
// half the CPU per 10 KB review. B is built as kubebuilder projects are, without it.
const goExperiments = { 'controller-runtime': '', 'go-hand': 'jsonv2' };
export const peprVersion = JSON.parse(readFileSync(join(here, 'pepr', 'package.json'), 'utf8'))
  .dependencies.pepr;

export function defaultCacheDir() {
  return join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'annex', 'bench');
}

/**
 * Builds (or finds) one reference server and says how to start it: the harness adds
 * BENCH_PORT, BENCH_CERT and BENCH_KEY to the environment.
 * @returns {{ path: string, command: string, args: string[] }}
 */
export function buildServer(
  name,
  { cacheDir = defaultCacheDir(), log = (m) => console.error(m) } = {},
) {
  if (goServers.includes(name)) {
    const path = buildGo(name, cacheDir, log);
    return { path, command: path, args: [] };
  }
  if (name === 'pepr') {
    const path = installPepr(cacheDir, log);
    return { path, command: process.execPath, args: [join(here, 'pepr', 'server.mjs'), path] };
  }
  throw new Error(
    `unknown reference server '${name}' (known: ${[...goServers, 'pepr'].join(', ')})`,
  );
}

function buildGo(name, cacheDir, log) {
  const src = join(here, name);
  const hash = createHash('sha256');
  hash.update(execFileSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' }));
  hash.update(`GOEXPERIMENT=${goExperiments[name]}\0`);
  for (const file of ['main.go', 'go.mod', 'go.sum']) {
    if (existsSync(join(src, file))) hash.update(`${file}\0`).update(readFileSync(join(src, file)));
  }
  const bin = join(cacheDir, 'bin', `${name}-${hash.digest('hex').slice(0, 16)}`);
  if (existsSync(bin)) return bin;
  mkdirSync(dirname(bin), { recursive: true });
  log(`building ${name} with go build (a cold build of controller-runtime takes minutes)`);
  const started = Date.now();
  const partial = `${bin}.partial-${process.pid}`;
  execFileSync('go', ['build', '-o', partial, '.'], {
    cwd: src,
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      GOFLAGS: '-trimpath -buildvcs=false -mod=readonly',
      GOTOOLCHAIN: 'local',
      GOEXPERIMENT: goExperiments[name],
    },
  });
  renameSync(partial, bin);
  log(`built ${name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return bin;
}

function installPepr(cacheDir, log) {
  const dir = join(cacheDir, `pepr-${peprVersion}`);
  const lock = readFileSync(join(here, 'pepr', 'package-lock.json'));
  const installed = join(dir, 'node_modules', '.package-lock.json');
  const done = join(dir, 'installed-lock.json');
  if (existsSync(installed) && existsSync(done) && readFileSync(done).equals(lock)) return dir;
  log(`installing pepr ${peprVersion} into ${dir}`);
  const started = Date.now();
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const file of ['package.json', 'package-lock.json'])
    copyFileSync(join(here, 'pepr', file), join(dir, file));
  // Pepr's peer dependencies (esbuild, typescript, prettier, ...) serve its build CLI, not
  // its admission server; no install scripts are needed either.
  execFileSync('npm', ['ci', '--legacy-peer-deps', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  copyFileSync(join(dir, 'package-lock.json'), done);
  log(`installed pepr in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return dir;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const name = process.argv[2];
  try {
    console.log(buildServer(name).path);
  } catch (err) {
    console.error(`build.mjs: ${err.message}`);
    process.exit(1);
  }
}
