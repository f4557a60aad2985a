// The real node's namespaces: one holder process (`unshare --net --mount`) owns a network and
// a mount namespace; every component joins them with `nsenter -t <pid> -n -m`. Inside: tmpfs
// over /run, /var/lib and /var/log (the host's stay untouched), a sysfs of the namespace's
// own, loopback with the node address, and a route for the Service range.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';

export interface HolderOptions {
  /** An empty folder the host's /sys/fs/cgroup is parked on while sysfs is remounted. */
  cgroupMountpoint: string;
  /** The node's InternalIP, on lo. */
  nodeIp: string;
  /** kube-apiserver's --service-cluster-ip-range. */
  serviceCidr: string;
}

/** Starts the holder; resolves once the namespaces are set up, with the pid to nsenter. */
export async function startHolder(
  o: HolderOptions,
): Promise<{ holder: ChildProcess; pid: number }> {
  const setup = [
    'set -e',
    'mount -t tmpfs -o mode=755 tmpfs /run',
    'mount -t tmpfs -o mode=755 tmpfs /var/lib',
    'mount -t tmpfs -o mode=755 tmpfs /var/log',
    // A sysfs of this network namespace (the CNI plugins read /sys/class/net), with the
    // host's cgroup mounts moved back under it.
    `mount --rbind /sys/fs/cgroup ${o.cgroupMountpoint}`,
    'mount -t sysfs sysfs /sys',
    `mount --move ${o.cgroupMountpoint} /sys/fs/cgroup`,
    'ip link set lo up',
    `ip addr add ${o.nodeIp}/32 dev lo`,
    // Service IPs need a route for the local routing decision before kube-proxy's DNAT.
    `ip route add ${o.serviceCidr} dev lo`,
    'echo ready $$',
    'exec sleep infinity',
  ].join('\n');
  const holder = spawn(
    'unshare',
    [
      '--net',
      '--mount',
      '--propagation',
      'private',
      '--fork',
      '--kill-child',
      '--',
      'sh',
      '-c',
      setup,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let holderErr = '';
  holder.stderr!.on('data', (d) => (holderErr += d));
  const pid = await new Promise<number>((resolve, reject) => {
    createInterface({ input: holder.stdout! }).on('line', (l) => {
      const m = /^ready (\d+)$/.exec(l);
      if (m) resolve(Number(m[1]));
    });
    holder.once('exit', (code) =>
      reject(new Error(`namespace setup failed (${code}): ${holderErr}`)),
    );
  });
  return { holder, pid };
}
