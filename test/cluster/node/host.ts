// The host side of the real node: the cgroups, processes, rules and links it makes or
// leaves behind (used by startNode's teardown and leftovers()), and a polling wait.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

/** The v1 hierarchies (and the unified one) a cgroup root appears in. */
export function cgroupHierarchies(): string[] {
  return readdirSync('/sys/fs/cgroup')
    .map((d) => join('/sys/fs/cgroup', d))
    .filter((d) => existsSync(join(d, 'cgroup.procs')));
}

/** Every cgroup directory under `dir`, deepest first. */
export function cgroupTree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...cgroupTree(join(dir, e.name)));
  }
  out.push(dir);
  return out;
}

export function pidsIn(cgroupDir: string): number[] {
  try {
    return readFileSync(join(cgroupDir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map(Number);
  } catch {
    return [];
  }
}

/** Pids whose network namespace is `netns` (an `net:[inode]` link text). */
export function pidsInNetns(netns: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      if (readlinkSync(`/proc/${d}/ns/net`) === netns) out.push(Number(d));
    } catch {
      // gone
    }
  }
  return out;
}

export async function waitFor(ok: () => boolean, ms: number, why: () => string): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(why());
}

export function iptablesSave(): string {
  const r = spawnSync('iptables-save', [], { encoding: 'utf8' });
  // Counters and the header's timestamp change by themselves.
  return (r.stdout ?? '')
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]/g, ''))
    .join('\n');
}

export function hostLinkNames(): string {
  const r = spawnSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  return (r.stdout ?? '')
    .split('\n')
    .map((l) => l.split(':')[1]?.trim())
    .filter(Boolean)
    .sort()
    .join(',');
}
