// The real node's teardown steps that work on the host alone (the processes left in the
// namespaces or under the cgroup root, the cgroup trees), and the check that nothing of
// the node remains: leftovers().
import { existsSync, readFileSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  cgroupHierarchies,
  cgroupTree,
  hostLinkNames,
  iptablesSave,
  pidsIn,
  pidsInNetns,
} from './host.js';

/** SIGKILLs whatever still runs in `netns` (shims) or under the cgroup root (containers), but the holder. */
export async function killNamespaceAndCgroup(
  netns: string,
  holderPid: number,
  cgroupRoot: string,
): Promise<void> {
  for (let round = 0; round < 20; round++) {
    const left = new Set<number>();
    if (netns) for (const pid of pidsInNetns(netns)) if (pid !== holderPid) left.add(pid);
    for (const h of cgroupHierarchies())
      for (const d of cgroupTree(join(h, cgroupRoot))) for (const pid of pidsIn(d)) left.add(pid);
    if (left.size === 0) return;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** rmdir of the cgroup root's trees in every hierarchy, deepest first. */
export function removeCgroupRoot(cgroupRoot: string): void {
  for (const h of cgroupHierarchies())
    for (const d of cgroupTree(join(h, cgroupRoot))) {
      try {
        rmdirSync(d);
      } catch {
        // reported by leftovers()
      }
    }
}

export interface NodeTraces {
  netns: string;
  cgroupRoot: string;
  dir: string;
  /** The host's `iptables-save` (counters stripped) and link names before the node started. */
  hostIptables: string;
  hostLinks: string;
}

/** What remains of the node: an empty list when the machine is as it was. */
export function nodeLeftovers(o: NodeTraces): string[] {
  const out: string[] = [];
  if (o.netns) for (const pid of pidsInNetns(o.netns)) out.push(`process ${pid} in ${o.netns}`);
  for (const h of cgroupHierarchies())
    if (existsSync(join(h, o.cgroupRoot))) out.push(`cgroup ${join(h, o.cgroupRoot)}`);
  if (existsSync(o.dir)) out.push(`folder ${o.dir}`);
  for (const l of readFileSync('/proc/self/mountinfo', 'utf8').split('\n'))
    if (l.includes(o.dir) || l.includes(o.cgroupRoot)) out.push(`mount ${l}`);
  if (iptablesSave() !== o.hostIptables) out.push("the host's iptables rules changed");
  const links = hostLinkNames();
  if (links !== o.hostLinks) out.push(`the host's links changed: ${o.hostLinks} -> ${links}`);
  for (const d of [
    '/var/lib/cni',
    '/var/lib/kubelet',
    '/run/containerd',
    '/var/log/pods',
    '/opt/containerd',
  ])
    if (existsSync(d)) out.push(`host path ${d}`);
  return out;
}
