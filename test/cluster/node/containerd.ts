// containerd's configuration for the real node (CRI on a socket in the node's folder, runc,
// the CNI bridge), and the CNI network: cni0 with host-local IPAM on the Pod range.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface ContainerdFiles {
  /** The node's folder: containerd's root/state, runc's root, CNI config and IPAM state. */
  dir: string;
  sock: string;
  /** Where the CNI plugins are. */
  bin: string;
  pauseImage: string;
  podCidr: string;
}

/** Writes <dir>/containerd.toml and <dir>/cni/net.d/10-annex.conflist. */
export function writeContainerdConfig(o: ContainerdFiles): void {
  writeFileSync(
    join(o.dir, 'containerd.toml'),
    `version = 3
root = "${join(o.dir, 'containerd', 'root')}"
state = "${join(o.dir, 'containerd', 'state')}"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs"]
[grpc]
  address = "${o.sock}"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${o.pauseImage}"
[plugins.'io.containerd.cri.v1.runtime']
  # Root here lacks CAP_SYS_RESOURCE: runc cannot lower oom_score_adj (the sandbox's -998
  # fails with "nsexec: failed to update /proc/self/oom_score_adj: Permission denied");
  # clamp to containerd's own score, as rootless setups do.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "${join(o.dir, 'runc')}"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["${o.bin}"]
    conf_dir = "${join(o.dir, 'cni', 'net.d')}"
`,
  );
  writeFileSync(
    join(o.dir, 'cni', 'net.d', '10-annex.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'annex',
      plugins: [
        {
          type: 'bridge',
          bridge: 'cni0',
          isGateway: true,
          // Pods reach Service IPs (kube-apiserver as 10.0.0.1) and the node address through
          // cni0; the node's namespace itself has no default route, so nothing goes further.
          isDefaultGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: o.podCidr }]],
            dataDir: join(o.dir, 'cni', 'ipam'),
          },
        },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    }),
  );
}
