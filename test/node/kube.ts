// kubectl, the built annex CLI and a polling wait, pointed at one node's control plane: what
// the files of test/node/ share (each starts its own node).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Node } from '../cluster/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function kube(node: () => Node) {
  const kubectl = (args: string[], timeout = 120_000) =>
    spawnSync(node().cluster.kubectl, ['--kubeconfig', node().cluster.adminKubeconfig, ...args], {
      encoding: 'utf8',
      timeout,
    });
  const ok = (args: string[]) => {
    const r = kubectl(args);
    if (r.status !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  return {
    kubectl,
    ok,
    json: (args: string[]) => JSON.parse(ok([...args, '-o', 'json'])),
    /** The built CLI (dist/), as a user runs it; never a developer's $KUBECONFIG. */
    annex: (args: string[]) =>
      spawnSync(process.execPath, [join(ROOT, 'dist', 'cli', 'main.js'), ...args], {
        encoding: 'utf8',
        timeout: 300_000,
        env: { ...process.env, KUBECONFIG: '' },
      }),
    /** Polls `check` every second until it holds; fails naming `what` after `ms`. */
    async eventually(what: string, ms: number, check: () => boolean): Promise<void> {
      const end = Date.now() + ms;
      while (Date.now() < end) {
        if (check()) return;
        await sleep(1000);
      }
      throw new Error(`timed out after ${ms / 1000}s waiting for ${what}`);
    },
  };
}
