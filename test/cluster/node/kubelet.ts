// The real node's kubelet configuration (cgroupfs under a test-owned cgroup root, cgroup v1
// allowed, its API on the node address, anonymous: see docs/node.md).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface KubeletFiles {
  /** The node's folder (Pod logs under it). */
  dir: string;
  /** containerd's CRI socket. */
  sock: string;
  cgroupRoot: string;
  nodeIp: string;
  podCidr: string;
  /** The kube-dns Service's ClusterIP and the cluster domain (Pods' resolv.conf). */
  clusterDns: string;
  clusterDomain: string;
}

export function writeKubeletConfig(file: string, o: KubeletFiles): void {
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      failCgroupV1: false,
      cgroupDriver: 'cgroupfs',
      cgroupRoot: o.cgroupRoot,
      containerRuntimeEndpoint: `unix://${o.sock}`,
      address: o.nodeIp,
      port: 10250,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      // kube-apiserver calls the kubelet without a client certificate (no
      // --kubelet-client-certificate in the test control plane): anonymous, allowed.
      authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
      authorization: { mode: 'AlwaysAllow' },
      podLogsDir: join(o.dir, 'pod-logs'),
      // No host resolver inside the namespace: ClusterFirst Pods get only the cluster DNS.
      resolvConf: '',
      clusterDNS: [o.clusterDns],
      clusterDomain: o.clusterDomain,
      failSwapOn: false,
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '1Mi' },
      podCIDR: o.podCidr,
      registerNode: true,
      syncFrequency: '5s',
      fileCheckFrequency: '5s',
      nodeStatusUpdateFrequency: '2s',
      serializeImagePulls: false,
    }),
  );
}
