// annex started as a kubelet would start its container, without a kubelet: the built CLI
// in a private mount namespace where /run is a fresh tmpfs holding the projected
// ServiceAccount volume at /var/run/secrets/kubernetes.io/serviceaccount (token from the
// TokenRequest API, the cluster CA, the namespace), KUBERNETES_SERVICE_HOST/PORT pointing
// at the test API server, and no kubeconfig at all: annex must find the API server the
// in-cluster way, with that ServiceAccount's RBAC only. (Needs root and unshare(1).)
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from './cli.js';
import { cluster, kubectlOk, type ClusterInfo } from './harness.js';

export interface AnnexPod {
  proc: ChildProcess;
  /** stdout + stderr so far (JSON log lines). */
  output(): string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Whether this machine can lay out a private /run (root with unshare). */
export const canRunAsPod = (): boolean =>
  process.getuid?.() === 0 &&
  spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0;

export async function startAnnexPod(opts: {
  namespace: string;
  serviceAccount: string;
  /** annex's config file, as the ConfigMap would mount it. */
  configYaml: string;
  /** Extra `annex serve` arguments (e.g. --port, --host). */
  args?: string[];
  env?: Record<string, string>;
  /** The control plane (default: the shared one of global setup). */
  cluster?: ClusterInfo;
  /** The CLI to run (default: this checkout's dist/cli/main.js). */
  cli?: string;
}): Promise<AnnexPod> {
  const c = opts.cluster ?? cluster!;
  const dir = mkdtempSync(join(tmpdir(), 'annex-pod-'));
  const token = (
    await kubectlOk(
      ['create', 'token', opts.serviceAccount, '-n', opts.namespace, '--duration=1h'],
      { as: { kubeconfig: c.adminKubeconfig } },
    )
  ).trim();
  writeFileSync(join(dir, 'token'), token);
  writeFileSync(join(dir, 'namespace'), opts.namespace);
  writeFileSync(join(dir, 'ca.crt'), readFileSync(c.servingCaFile));
  writeFileSync(join(dir, 'annex.yaml'), opts.configYaml);
  const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
  const script = [
    'set -e',
    'mount -t tmpfs -o mode=0755 tmpfs /run',
    `mkdir -p ${sa} /run/annex-config`,
    `cp "$POD_DIR/token" "$POD_DIR/ca.crt" "$POD_DIR/namespace" ${sa}/`,
    'cp "$POD_DIR/annex.yaml" /run/annex-config/annex.yaml',
    `exec "$NODE" "$CLI" serve --config /run/annex-config/annex.yaml "$@"`,
  ].join('\n');
  const url = new URL(c.server);
  const proc = spawn(
    'unshare',
    ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, 'sh', ...(opts.args ?? [])],
    {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        POD_DIR: dir,
        NODE: process.execPath,
        CLI: opts.cli ?? cli,
        KUBERNETES_SERVICE_HOST: url.hostname,
        KUBERNETES_SERVICE_PORT: url.port,
        ...opts.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) =>
    proc.on('exit', (code) => {
      rmSync(dir, { recursive: true, force: true });
      resolve(code);
    }),
  );
  return {
    proc,
    output: () => out,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
}

/** Polls `check` until it is true (or throws the last reason after `ms`). */
export async function eventually(check: () => Promise<boolean>, ms: number, what: string) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
