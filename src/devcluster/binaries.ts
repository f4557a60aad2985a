// Finds (or builds, once per machine) the pinned kube-apiserver, kubectl,
// kube-controller-manager and etcd.
// The versions live in test/cluster/versions.env; test/cluster/build.sh does the work
// and caches outside the repo. Both are repo files: `annex demo` runs from a checkout.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Two levels below the repo root both as src/devcluster and as dist/devcluster.
const here = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'test', 'cluster');

export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const env = Object.fromEntries(
    readFileSync(join(here, 'versions.env'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=', 2) as [string, string]),
  );
  return { kubernetes: env.KUBERNETES_VERSION!, etcd: env.ETCD_VERSION! };
}

export type BinariesResult = { binDir: string } | { missing: string };

/** Runs build.sh (instant when cached); its progress lines go to our stderr. */
export function ensureBinaries(): BinariesResult {
  const r = spawnSync('bash', [join(here, 'build.sh')], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status === 0) return { binDir: r.stdout.trim().split('\n').pop()! };
  if (r.status === 3)
    return { missing: 'Go is not installed (needed once to build kube-apiserver and etcd)' };
  return { missing: `test/cluster/build.sh failed with exit code ${r.status}` };
}
