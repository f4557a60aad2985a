// What end-to-end tests use: the control plane from global setup, the matching kubectl,
// raw HTTPS calls with a chosen identity, and unique namespaces.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request, type Agent } from 'node:https';
import { readFileSync, statSync } from 'node:fs';
import { inject, describe } from 'vitest';
import { parse } from 'yaml';
import type { ClusterInfo } from './control-plane.js';
import { waitForCondition as waitFor } from '../../src/devcluster/wait.js';
import type { Kubectl } from '../../src/devcluster/wire.js';

export type { ClusterInfo } from './control-plane.js';

export const cluster: ClusterInfo | null = inject('cluster');

/** describe() for real-cluster tests: skipped, with the reason in the title, without Go. */
export function describeCluster(name: string, fn: (c: ClusterInfo) => void): void {
  if (!cluster) {
    describe.skip(`${name} (skipped: ${inject('clusterSkipReason')})`, () => {});
    return;
  }
  const c = cluster;
  describe(name, () => fn(c));
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export type Identity = 'admin' | 'user' | { kubeconfig: string };

function kubeconfigFor(c: ClusterInfo, as: Identity = 'admin'): string {
  if (as === 'admin') return c.adminKubeconfig;
  if (as === 'user') return c.userKubeconfig;
  return as.kubeconfig;
}

/** Runs the control plane's own kubectl (same version as the server). Never throws on exit code. */
export function kubectl(
  args: string[],
  opts: { as?: Identity; input?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const c = cluster!;
  return new Promise((resolve) => {
    const child = execFile(
      c.kubectl,
      ['--kubeconfig', kubeconfigFor(c, opts.as), ...args],
      {
        timeout: opts.timeoutMs ?? 60_000,
        maxBuffer: 64 << 20,
        env: { ...process.env, KUBECONFIG: '' },
      },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin!.end(opts.input);
  });
}

/** kubectl that must succeed; returns stdout. */
export async function kubectlOk(
  args: string[],
  opts: { as?: Identity; input?: string; timeoutMs?: number } = {},
): Promise<string> {
  const r = await kubectl(args, opts);
  if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout;
}

/**
 * Waits until `targets` (`crd/x`, or `apiservice -l app=y`) have condition `condition` True,
 * tolerating objects that do not exist or have no conditions yet (src/devcluster/wait.ts).
 */
export function waitForCondition(
  targets: string[],
  condition: string,
  opts: { as?: Identity; timeoutMs?: number } = {},
): Promise<string> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  // The process limit only stops a kubectl that outlives its own --timeout.
  const run: Kubectl = (args) => kubectlOk(args, { ...opts, timeoutMs: timeoutMs + 30_000 });
  return waitFor(run, targets, condition, timeoutMs);
}

/** A fresh namespace with its `default` ServiceAccount (no controller-manager makes it). */
export async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await kubectlOk(['create', 'namespace', name]);
  await kubectlOk(['create', 'serviceaccount', 'default', '-n', name]);
  return name;
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json: () => any;
}

interface Credentials {
  ca: Buffer;
  cert?: Buffer;
  key?: Buffer;
  token?: string;
}

/** Read once per kubeconfig file version: differential tests send hundreds of requests. */
const credentials = new Map<string, Credentials>();

function credentialsOf(kubeconfig: string): Credentials {
  const key = `${kubeconfig}@${statSync(kubeconfig).mtimeMs}`;
  let id = credentials.get(key);
  if (!id) {
    const user = parse(readFileSync(kubeconfig, 'utf8')).users[0].user as Record<string, string>;
    const b64 = (k: string) => (user[k] ? Buffer.from(user[k], 'base64') : undefined);
    id = {
      ca: readFileSync(cluster!.servingCaFile),
      cert: b64('client-certificate-data'),
      key: b64('client-key-data'),
      token: user.token,
    };
    credentials.set(key, id);
  }
  return id;
}

/** A raw HTTPS request to the API server as the identity in a kubeconfig. */
export function apiRequest(
  method: string,
  path: string,
  opts: { as?: Identity; body?: unknown; headers?: Record<string, string>; agent?: Agent } = {},
): Promise<RawResponse> {
  const c = cluster!;
  const id = credentialsOf(kubeconfigFor(c, opts.as));
  const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${c.server}${path}`,
      {
        method,
        ...(opts.agent ? { agent: opts.agent } : {}),
        ca: id.ca,
        cert: id.cert,
        key: id.key,
        headers: {
          accept: 'application/json',
          ...(id.token ? { authorization: `Bearer ${id.token}` } : {}),
          ...(payload ? { 'content-type': 'application/json' } : {}),
          ...opts.headers,
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (body += d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body,
            json: () => JSON.parse(body),
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * The namespace controller's last step, for an emptied namespace stuck in Terminating on a
 * control plane without kube-controller-manager.
 */
export async function finalizeNamespace(ns: string): Promise<void> {
  const r = await kubectl(['get', 'namespace', ns, '-o', 'json']);
  if (r.code !== 0) return;
  const o = JSON.parse(r.stdout);
  o.spec.finalizers = [];
  await kubectlOk(['replace', '--raw', `/api/v1/namespaces/${ns}/finalize`, '-f', '-'], {
    input: JSON.stringify(o),
  });
}
