// Exec credential plugins (users[].user.exec), as client-go runs them for EKS, GKE, AKS
// and many minikube setups: run the command with KUBERNETES_EXEC_INFO, read an
// ExecCredential from its stdout, keep it until status.expirationTimestamp (or until the
// server answers 401), then run the command again. annex is never interactive: stdin is
// closed and spec.interactive is false; its stderr is kept for the one-line error rather
// than passed through. Each run is bounded by the client's budget.
import { spawn } from 'node:child_process';
import { isAbsolute, resolve, sep } from 'node:path';
import type { Credential, CredentialSource } from './credentials.js';
import { KubeconfigError } from './errors.js';

export const EXEC_API_VERSIONS = [
  'client.authentication.k8s.io/v1',
  'client.authentication.k8s.io/v1beta1',
] as const;

export type InteractiveMode = 'Never' | 'IfAvailable' | 'Always';

export interface ExecConfig {
  apiVersion: (typeof EXEC_API_VERSIONS)[number];
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  installHint?: string;
  provideClusterInfo: boolean;
  interactiveMode: InteractiveMode;
}

/** spec.cluster of the ExecCredential, as client-go fills it (kubeconfig field names). */
export interface ExecClusterInfo {
  server: string;
  'tls-server-name'?: string;
  'insecure-skip-tls-verify'?: boolean;
  /** base64, as Go marshals []byte. */
  'certificate-authority-data'?: string;
  'proxy-url'?: string;
  'disable-compression'?: boolean;
  /** The cluster's "client.authentication.k8s.io/exec" extension. */
  config?: unknown;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Validates users[].user.exec; `where` prefixes errors ("/k/config: user \"u\""). */
export function parseExecConfig(exec: unknown, where: string, baseDir: string): ExecConfig {
  const fail = (msg: string): never => {
    throw new KubeconfigError(`${where}: exec: ${msg}`);
  };
  if (!isObj(exec)) return fail('must be a mapping');
  const apiVersion = exec.apiVersion;
  if (!EXEC_API_VERSIONS.includes(apiVersion as ExecConfig['apiVersion'])) {
    fail(
      `"apiVersion" must be one of ${EXEC_API_VERSIONS.join(', ')} (got ${JSON.stringify(apiVersion ?? null)})`,
    );
  }
  const command = exec.command;
  if (typeof command !== 'string' || command === '') return fail('"command" is not set');
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === 'string'))
    fail('"args" must be a list of strings');
  const env = exec.env ?? [];
  if (
    !Array.isArray(env) ||
    !env.every((e) => isObj(e) && typeof e.name === 'string' && typeof e.value === 'string')
  ) {
    fail('"env" must be a list of {name, value}');
  }
  // v1 has no default (kubectl: "interactiveMode must be specified"); v1beta1 defaults it.
  const mode =
    exec.interactiveMode ?? (apiVersion === EXEC_API_VERSIONS[0] ? undefined : 'IfAvailable');
  if (mode === undefined) fail(`"interactiveMode" must be specified for ${apiVersion as string}`);
  if (mode !== 'Never' && mode !== 'IfAvailable' && mode !== 'Always')
    fail(`invalid "interactiveMode" ${JSON.stringify(mode)} (Never, IfAvailable or Always)`);
  if (mode === 'Always') {
    fail(
      `plugin "${command}" needs interactiveMode Always (a terminal); annex never runs plugins interactively — use a plugin mode that needs no prompt`,
    );
  }
  if (exec.provideClusterInfo !== undefined && typeof exec.provideClusterInfo !== 'boolean')
    fail('"provideClusterInfo" must be true or false');
  const cfg: ExecConfig = {
    apiVersion: apiVersion as ExecConfig['apiVersion'],
    // Only a path is resolved against the kubeconfig's folder; a bare name is looked up on PATH.
    command: command.includes(sep) && !isAbsolute(command) ? resolve(baseDir, command) : command,
    args: args as string[],
    env: (env as Obj[]).map((e) => ({ name: e.name as string, value: e.value as string })),
    provideClusterInfo: exec.provideClusterInfo === true,
    interactiveMode: mode as InteractiveMode,
  };
  if (typeof exec.installHint === 'string' && exec.installHint.trim())
    cfg.installHint = exec.installHint;
  return cfg;
}

/** The KUBERNETES_EXEC_INFO value: what the plugin may learn about the request. */
export function execInfo(cfg: ExecConfig, cluster?: ExecClusterInfo): string {
  return JSON.stringify({
    apiVersion: cfg.apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: false, ...(cfg.provideClusterInfo && cluster ? { cluster } : {}) },
  });
}

export interface ParsedExecCredential {
  credential: Credential;
  /** ms since the epoch; absent = valid until the server rejects it. */
  expiresAt?: number;
}

/** The plugin's stdout → a credential, with client-go's checks and messages. */
export function parseExecCredential(stdout: string, cfg: ExecConfig): ParsedExecCredential {
  const fail = (msg: string): never => {
    throw new KubeconfigError(`exec plugin "${cfg.command}": ${msg}`);
  };
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch {
    return fail('did not print an ExecCredential (stdout is not JSON)');
  }
  if (!isObj(doc) || doc.kind !== 'ExecCredential')
    return fail('did not print an ExecCredential (kind is not "ExecCredential")');
  if (doc.apiVersion !== cfg.apiVersion) {
    fail(
      `is configured to use API version ${cfg.apiVersion}, plugin returned version ${JSON.stringify(doc.apiVersion ?? null)}`,
    );
  }
  const status = doc.status;
  if (!isObj(status)) return fail('did not return a status field');
  const s = (k: string) =>
    typeof status[k] === 'string' && status[k] !== '' ? status[k] : undefined;
  const token = s('token');
  const cert = s('clientCertificateData');
  const key = s('clientKeyData');
  if (!token && !cert && !key) fail('did not return a token or cert/key pair');
  if (!cert !== !key) fail('returned only certificate or key, not both');
  const credential: Credential = {};
  if (token) credential.token = token;
  if (cert && key) Object.assign(credential, { cert: Buffer.from(cert), key: Buffer.from(key) });
  const out: ParsedExecCredential = { credential };
  const exp = status.expirationTimestamp;
  if (exp !== undefined && exp !== null) {
    const at = typeof exp === 'string' ? Date.parse(exp) : NaN;
    if (Number.isNaN(at)) fail(`invalid expirationTimestamp ${JSON.stringify(exp)}`);
    out.expiresAt = at;
  }
  return out;
}

/** Runs the command and resolves its stdout; rejects with one line naming the command. */
export type ExecRunner = (cfg: ExecConfig, info: string, timeoutMs: number) => Promise<string>;

const MAX_OUTPUT = 1 << 20;

export const runPlugin: ExecRunner = (cfg, info, timeoutMs) =>
  new Promise((resolvePromise, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, KUBERNETES_EXEC_INFO: info };
    for (const e of cfg.env) env[e.name] = e.value;
    const child = spawn(cfg.command, cfg.args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const label = `exec plugin "${cfg.command}"`;
    let stdout = '';
    let stderr = '';
    let done = false;
    const finish = (err: Error | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolvePromise(stdout);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish(new KubeconfigError(`${label} gave no credential within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      stdout += d;
      if (stdout.length > MAX_OUTPUT) {
        child.kill('SIGKILL');
        finish(new KubeconfigError(`${label} printed more than ${MAX_OUTPUT} bytes`));
      }
    });
    child.stderr.on('data', (d: string) => {
      stderr = (stderr + d).slice(-4096);
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') {
        const hint = cfg.installHint ? `: ${oneLine(cfg.installHint)}` : '';
        finish(new KubeconfigError(`${label} not found${hint}`));
      } else finish(new KubeconfigError(`${label} cannot be run (${e.code ?? e.message})`));
    });
    child.on('close', (code, signal) => {
      if (code === 0) return finish(null);
      const last = stderr.trim().split('\n').pop()?.trim() ?? '';
      const why = signal ? `was killed by ${signal}` : `failed with exit code ${code}`;
      finish(
        new KubeconfigError(`${label} ${why}${last ? `: ${oneLine(last).slice(0, 300)}` : ''}`),
      );
    });
  });

/**
 * The plugin as a credential source: one run at a time, its answer kept until it expires
 * or the server rejects it.
 */
export function execCredentialSource(
  cfg: ExecConfig,
  cluster: ExecClusterInfo,
  opts: { run?: ExecRunner; now?: () => number } = {},
): CredentialSource {
  const run = opts.run ?? runPlugin;
  const now = opts.now ?? Date.now;
  let cached: ParsedExecCredential | undefined;
  let running: Promise<Credential> | undefined;
  return {
    get({ timeoutMs }) {
      if (cached && (cached.expiresAt === undefined || now() < cached.expiresAt))
        return cached.credential;
      running ??= run(cfg, execInfo(cfg, cluster), timeoutMs)
        .then((stdout) => {
          cached = parseExecCredential(stdout, cfg);
          return cached.credential;
        })
        .finally(() => (running = undefined));
      return running;
    },
    rejected(used) {
      if (cached?.credential === used) cached = undefined;
      return true;
    },
  };
}
