// vitest global setup for the `node` project (issue 22): builds or reuses what every file of
// test/node/ needs before any starts a node, so a cold build is one step, timed, not a
// hook timeout in the first file: the control plane and node binaries (devcluster/build.sh,
// build-node.sh), the workload images (build-node-images.sh) and annex's image as a
// docker-archive (scripts/image.sh --archive). Only this project builds them; each file
// starts its own node (test/cluster/node.ts). Tests read `inject('nodeImage')`, or
// `inject('nodeSkipReason')` when no node can run here.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { nodeUnavailable } from '../cluster/node.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The docker-archive of annex's image (localhost/annex:test), or '' when skipped. */
    nodeImage: string;
    nodeSkipReason: string;
  }
}

const ROOT = join(import.meta.dirname, '..', '..');
const log = (l: string) => console.error(`node-setup: ${l}`);

/** What is missing for a node and annex's image, or undefined. */
function unavailable(): string | undefined {
  const node = nodeUnavailable();
  if (node) return node;
  // scripts/image.sh builds the image offline with these (Debian packages).
  const missing = ['podman', 'mmdebstrap'].filter(
    (t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0,
  );
  if (missing.length) return `needs ${missing.join(' and ')} to build annex's image`;
  return undefined;
}

/** Runs a step, its progress on stderr; returns the last line of its stdout. */
function step(what: string, cmd: string, args: string[]): string {
  const t0 = Date.now();
  const r = spawnSync(cmd, args, {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    // The workers inherit this; kubectl and annex must never reach a developer's cluster.
    env: { ...process.env, KUBECONFIG: '' },
  });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status}): ${r.stdout}`);
  log(`${what}: ${(Date.now() - t0) / 1000}s`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

export default function setup(project: TestProject) {
  delete process.env.KUBECONFIG;
  const why = unavailable();
  if (why) {
    if (process.env.ANNEX_REQUIRE_CLUSTER === '1')
      throw new Error(`ANNEX_REQUIRE_CLUSTER=1 but the real-node suite cannot run: ${why}`);
    console.error(`annex: skipping the real-node tests: ${why}`);
    project.provide('nodeImage', '');
    project.provide('nodeSkipReason', why);
    return;
  }
  step('control plane binaries', 'bash', [join(ROOT, 'devcluster', 'build.sh')]);
  step('node binaries', 'bash', [join(ROOT, 'devcluster', 'build-node.sh')]);
  step('node images', 'bash', [join(ROOT, 'devcluster', 'build-node-images.sh')]);
  // The image's inputs are the built tree; `npm test` has built it, `npm run test:node` not.
  step('npm run build', 'npm', ['run', 'build', '--silent']);
  const archive = step("annex's image", 'bash', [
    join(ROOT, 'scripts', 'image.sh'),
    '--archive',
    '--no-checks',
  ]);
  if (!archive.endsWith('.tar')) throw new Error(`scripts/image.sh printed no archive: ${archive}`);
  project.provide('nodeImage', archive);
  project.provide('nodeSkipReason', '');
}
