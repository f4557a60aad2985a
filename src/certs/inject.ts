// Writes a caBundle into live APIServices and webhook configurations by running kubectl.
// A stop-gap until src/kube/client.ts exists: kubectl brings kubeconfig handling (exec
// plugins, contexts) for free, and `--field-manager=annex` records who owns the field.
import { execFile } from 'node:child_process';

export type InjectKind =
  | 'apiservice'
  | 'mutatingwebhookconfiguration'
  | 'validatingwebhookconfiguration';

export interface InjectOptions {
  kubeconfig: string;
  /** base64 of the CA PEM, as returned by ensureCertificates. */
  caBundle: string;
  apiServices?: string[];
  mutating?: string[];
  validating?: string[];
  /** Default: env ANNEX_KUBECTL, else `kubectl` from PATH. */
  kubectl?: string;
}

export interface InjectResult {
  kind: InjectKind;
  name: string;
  /** False when every caBundle already had the value. */
  changed: boolean;
  /** Webhook configurations: how many webhooks carry the bundle. */
  webhooks?: number;
}

export class KubectlError extends Error {}

const ATTEMPTS = 3;

export async function injectCaBundle(opts: InjectOptions): Promise<InjectResult[]> {
  const kubectl = opts.kubectl ?? process.env.ANNEX_KUBECTL ?? 'kubectl';
  const run = (args: string[]) => runKubectl(kubectl, ['--kubeconfig', opts.kubeconfig, ...args]);
  const results: InjectResult[] = [];
  for (const name of opts.apiServices ?? []) {
    results.push(await injectApiService(run, name, opts.caBundle));
  }
  for (const [kind, names] of [
    ['mutatingwebhookconfiguration', opts.mutating ?? []],
    ['validatingwebhookconfiguration', opts.validating ?? []],
  ] as const) {
    for (const name of names) results.push(await injectWebhooks(run, kind, name, opts.caBundle));
  }
  return results;
}

type Run = (args: string[]) => Promise<string>;

async function injectApiService(run: Run, name: string, caBundle: string): Promise<InjectResult> {
  const obj = getJson(await run(['get', 'apiservice', name, '-o', 'json']), 'apiservice', name);
  const spec = (obj.spec ?? {}) as { caBundle?: string; insecureSkipTLSVerify?: boolean };
  if (spec.caBundle === caBundle && !spec.insecureSkipTLSVerify) {
    return { kind: 'apiservice', name, changed: false };
  }
  // The API server refuses insecureSkipTLSVerify together with a caBundle.
  const patch = { spec: { caBundle, insecureSkipTLSVerify: false } };
  await run(['patch', 'apiservice', name, '--type=merge', '-p', JSON.stringify(patch), '--field-manager=annex']);
  return { kind: 'apiservice', name, changed: true };
}

async function injectWebhooks(
  run: Run,
  kind: InjectKind,
  name: string,
  caBundle: string,
): Promise<InjectResult> {
  for (let attempt = 1; ; attempt++) {
    const obj = getJson(await run(['get', kind, name, '-o', 'json']), kind, name);
    const webhooks = (obj.webhooks ?? []) as { clientConfig?: { caBundle?: string } }[];
    if (webhooks.length === 0) throw new KubectlError(`${kind} ${name} has no webhooks`);
    if (webhooks.every((w) => w.clientConfig?.caBundle === caBundle)) {
      return { kind, name, changed: false, webhooks: webhooks.length };
    }
    // The index paths are only right for the list we just read: the `test` op makes the
    // patch fail, rather than hit the wrong webhook, if someone changed it in between.
    const ops = [
      { op: 'test', path: '/metadata/resourceVersion', value: obj.metadata?.resourceVersion },
      ...webhooks.map((_, i) => ({
        op: 'add',
        path: `/webhooks/${i}/clientConfig/caBundle`,
        value: caBundle,
      })),
    ];
    try {
      await run(['patch', kind, name, '--type=json', '-p', JSON.stringify(ops), '--field-manager=annex']);
      return { kind, name, changed: true, webhooks: webhooks.length };
    } catch (e) {
      if (attempt >= ATTEMPTS) throw e;
    }
  }
}

interface KubeObject {
  metadata?: { resourceVersion?: string };
  spec?: unknown;
  webhooks?: unknown[];
}

function getJson(text: string, kind: string, name: string): KubeObject {
  try {
    return JSON.parse(text) as KubeObject;
  } catch {
    throw new KubectlError(`kubectl get ${kind} ${name} did not return JSON`);
  }
}

function runKubectl(kubectl: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(kubectl, args, { timeout: 30_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (!err) return resolve(stdout);
      const shown = args.filter((a, i) => args[i - 1] !== '-p').join(' ');
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        return reject(
          new KubectlError(`${kubectl} not found (put kubectl on PATH or set ANNEX_KUBECTL)`),
        );
      }
      const why = stderr.trim() || err.message;
      reject(new KubectlError(`${kubectl} ${shown} failed: ${why}`));
    });
  });
}
