// Finds (or builds, once per machine) the pinned kube-apiserver, kubectl,
// kube-controller-manager and etcd.
// The versions live in devcluster/versions.env; devcluster/build.sh does the work and
// caches outside the package. Both ship in the package (package.json `files`), so
// `annex demo` works from an installed annex as from a checkout.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The package root is two levels up both from src/devcluster and from dist/devcluster.
const recipe = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'devcluster');

export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const env = Object.fromEntries(
    readFileSync(join(recipe, 'versions.env'), 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => l.split('=', 2) as [string, string]),
  );
  return { kubernetes: env.KUBERNETES_VERSION!, etcd: env.ETCD_VERSION! };
}

export type BinariesResult = { binDir: string } | { missing: string };

/** Runs build.sh (instant when cached); its progress lines go to our stderr. */
export function ensureBinaries(): BinariesResult {
  const script = join(recipe, 'build.sh');
  const r = spawnSync('bash', [script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status === 0) return { binDir: r.stdout.trim().split('\n').pop()! };
  if (r.status === 3)
    return { missing: 'Go is not installed (needed once to build kube-apiserver and etcd)' };
  return { missing: `${script} failed with exit code ${r.status ?? r.signal}` };
}
