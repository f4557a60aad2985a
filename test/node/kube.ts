// kubectl, the built annex CLI and a polling wait, pointed at one node's control plane: what
// the files of test/node/ share (each starts its own node).
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { HELLO_IMAGE, type Node } from '../cluster/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
/** The tag scripts/image.sh gives annex's image (and the archive keeps). */
export const IMAGE = 'localhost/annex:test';
/** A Pod spec of the hello image (container `name`, with `extra` fields), hardened as the
 * restricted Pod Security profile wants, Ready by /healthz on :8080. */
export function helloPodSpec(name: string, extra: object = {}) {
  return {
    terminationGracePeriodSeconds: 5,
    containers: [
      {
        name,
        image: HELLO_IMAGE,
        imagePullPolicy: 'Never',
        ports: [{ containerPort: 8080 }],
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 1 },
        securityContext: {
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        },
        ...extra,
      },
    ],
  };
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `root`: the checkout whose dist/ and manifests/ the CLI runs from (a user's copy). */
export function kube(node: () => Node, root: () => string = () => ROOT) {
  const kubectl = (args: string[], timeout = 120_000, input?: string) =>
    spawnSync(node().cluster.kubectl, ['--kubeconfig', node().cluster.adminKubeconfig, ...args], {
      encoding: 'utf8',
      timeout,
      input,
    });
  const ok = (args: string[], input?: string) => {
    const r = kubectl(args, 120_000, input);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  /** kubectl without blocking the event loop: for the long ones while a load generator
   * in this process must keep its rate (spawnSync would stop its timers). */
  const kubectlAsync = (args: string[], timeout = 120_000) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const c = node().cluster;
      const child = spawn(c.kubectl, ['--kubeconfig', c.adminKubeconfig, ...args], { timeout });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  /** The built CLI (dist/), as a user runs it; never a developer's $KUBECONFIG. */
  const annex = (args: string[]) =>
    spawnSync(process.execPath, [join(root(), 'dist', 'cli', 'main.js'), ...args], {
      encoding: 'utf8',
      timeout: 300_000,
      env: { ...process.env, KUBECONFIG: '' },
    });
  return {
    kubectl,
    kubectlAsync,
    ok,
    json: (args: string[]) => JSON.parse(ok([...args, '-o', 'json'])),
    annex,
    /** docs/install.md step 4: the kustomize base as shipped but for the image. */
    install: () =>
      annex([
        'install',
        '--kubeconfig',
        node().cluster.adminKubeconfig,
        '--image',
        IMAGE,
        '--wait',
        '120',
      ]),
    /** Polls `check` every second until it holds; fails naming `what` after `ms`. */
    async eventually(
      what: string,
      ms: number,
      check: () => boolean | Promise<boolean>,
    ): Promise<void> {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        if (await check()) return;
        await sleep(1000);
      }
      throw new Error(`timed out after ${ms / 1000}s waiting for ${what}`);
    },
  };
}
