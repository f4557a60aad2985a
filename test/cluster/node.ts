// A real node for the tests that need one (issue 22): containerd + kubelet (and the control
// plane they talk to) inside a network namespace and a mount namespace this file creates.
//
// - The namespaces are held by one `sleep` started with `unshare --net --mount`; every other
//   process joins them with `nsenter -t <pid> -n -m`. Inside: loopback, the node's address
//   on lo (NODE_IP, never routed anywhere), the CNI bridge `cni0` with host-local IPAM on
//   POD_CIDR, tmpfs over /run, /var/lib and /var/log (the host's stay untouched), and a
//   sysfs of the namespace's own.
// - The control plane (etcd, kube-apiserver) runs inside too, so that kube-apiserver reaches
//   the kubelet (logs, exec) without a packet leaving the namespace; the host reaches
//   kube-apiserver through a Unix socket (host 127.0.0.1:P -> socket -> namespace 127.0.0.1:P).
// - Pods' cgroups live under a test-owned cgroup root (/annex-node-<id>) in every v1
//   hierarchy (cgroupfs driver; this machine is cgroup v1/hybrid: failCgroupV1: false).
// - Teardown kills every process of the namespaces and of the cgroup root, removes the
//   cgroups and the temp folder, and `leftovers()` says what, if anything, remains.
// - This file wires the steps in order; the pieces are in node/: namespace.ts (the holder),
//   forward.ts (host <-> kube-apiserver), containerd.ts and kubelet.ts (their configuration),
//   teardown.ts (the host-side sweep, leftovers()), host.ts (cgroups, processes, rules).
// - Pods reach kube-apiserver as the `kubernetes` Service: it also listens on NODE_IP,
//   which it writes as the Service's endpoint; Pods' default route is cni0.
import { spawn, spawnSync, execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ControlPlane, type ClusterInfo } from '../../src/devcluster/control-plane.js';
import { opensslLeaf, CLIENT_EXT } from '../../src/devcluster/pki.js';
import { writeKubeconfig } from '../../src/devcluster/kubeconfig.js';
import { pinnedVersions } from '../../src/devcluster/binaries.js';
import { stopInReverse } from '../../src/devcluster/stop.js';
import { writeContainerdConfig } from './node/containerd.js';
import { writeKubeletConfig } from './node/kubelet.js';
import { CLUSTER_DNS_IP, CLUSTER_DOMAIN, clusterDnsManifest } from './node/dns.js';
import { cgroupHierarchies, hostLinkNames, iptablesSave, waitFor } from './node/host.js';
import { startHolder } from './node/namespace.js';
import { forwardApiServer } from './node/forward.js';
import { killNamespaceAndCgroup, nodeLeftovers, removeCgroupRoot } from './node/teardown.js';

export const NODE_NAME = 'annex-node';
/** The node's InternalIP: on the namespace's lo only. */
export const NODE_IP = '10.201.0.1';
export const POD_CIDR = '10.88.0.0/24';
/** The control plane's --service-cluster-ip-range. */
export const SERVICE_CIDR = '10.0.0.0/24';
export const HELLO_IMAGE = 'localhost/annex-hello:local';
export const PAUSE_IMAGE = 'localhost/annex-pause:local';

const devcluster = fileURLToPath(new URL('../../devcluster/', import.meta.url));

/** Why a node cannot run here, or undefined. */
export function nodeUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (namespaces, cgroups, mounts)';
  for (const t of ['unshare', 'nsenter', 'ip', 'iptables', 'go']) {
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) return `needs ${t}`;
  }
  if (!existsSync('/usr/sbin/runc')) return 'needs runc (/usr/sbin/runc, Debian package runc)';
  return undefined;
}

function script(name: string): string {
  const r = spawnSync('bash', [join(devcluster, name)], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`devcluster/${name} failed (${r.status})`);
  return r.stdout.trim().split('\n').pop()!;
}

export interface Node {
  readonly dir: string;
  readonly cluster: ClusterInfo;
  readonly cgroupRoot: string;
  /** Runs a command inside the node's namespaces (crictl, ctr, ip…); never throws. */
  exec(cmd: string, args: string[]): { code: number; stdout: string; stderr: string };
  crictl(args: string[]): { code: number; stdout: string; stderr: string };
  /** Waits until the cluster DNS (CoreDNS, Service kube-dns) is available. */
  dnsReady(ms?: number): Promise<void>;
  /** Stops everything and removes what it made. */
  stop(): Promise<void>;
  /** What remains after stop(): an empty list when the machine is as it was. */
  leftovers(): string[];
  /** Seconds each start step took. */
  readonly timings: Record<string, number>;
}

export interface NodeOptions {
  /** More image archives (docker-archive or oci-archive) to import into containerd's k8s.io. */
  images?: string[];
}

export async function startNode(
  log: (l: string) => void = () => {},
  opts: NodeOptions = {},
): Promise<Node> {
  const timings: Record<string, number> = {};
  let t = Date.now();
  const lap = (k: string) => {
    timings[k] = (Date.now() - t) / 1000;
    log(`${k}: ${timings[k]}s`);
    t = Date.now();
  };
  const cpBin = script('build.sh');
  const bin = script('build-node.sh');
  const images = script('build-node-images.sh');
  lap('binaries');

  const id = randomBytes(3).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'annex-node-'));
  const cgroupRoot = `/annex-node-${id}`;
  const p = (...f: string[]) => join(dir, ...f);
  for (const d of ['containerd', 'kubelet', 'pod-logs', 'cni/net.d', 'cni/ipam', 'cg', 'runc'])
    mkdirSync(p(d), { recursive: true });
  const hostIptables = iptablesSave();
  const hostLinks = hostLinkNames();

  const children: ChildProcess[] = [];
  let hostForward: ChildProcess | undefined;
  let holder: ChildProcess | undefined;
  let holderPid = 0;
  let netns = '';
  let cp: ControlPlane | undefined;
  let stopped = false;

  const nsenter = () => ['nsenter', '-t', String(holderPid), '-n', '-m', '--'];
  const env = { ...process.env, PATH: `${bin}:/usr/sbin:/usr/bin:/sbin:/bin`, KUBECONFIG: '' };
  const exec = (cmd: string, args: string[]) => {
    const r = spawnSync(nsenter()[0]!, [...nsenter().slice(1), cmd, ...args], {
      encoding: 'utf8',
      env,
    });
    return {
      code: r.status ?? 1,
      stdout: r.stdout ?? '',
      stderr: r.stderr ?? r.error?.message ?? '',
    };
  };
  const run = (cmd: string, args: string[]) => {
    const r = exec(cmd, args);
    if (r.code !== 0)
      throw new Error(`${cmd} ${args.join(' ')} (in the node's namespaces): ${r.stderr}`);
    return r.stdout;
  };
  const sock = p('containerd.sock');
  const crictl = (args: string[]) =>
    exec(join(bin, 'crictl'), [
      '--runtime-endpoint',
      `unix://${sock}`,
      '--timeout',
      '20s',
      ...args,
    ]);
  const daemon = (name: string, cmd: string, args: string[]) => {
    const out = openSync(p(`${name}.log`), 'a');
    const c = spawn(nsenter()[0]!, [...nsenter().slice(1), cmd, ...args], {
      stdio: ['ignore', out, out],
      env,
    });
    children.push(c);
    return c;
  };

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const t0 = Date.now();
    const say = (m: string) => log(`stop +${((Date.now() - t0) / 1000).toFixed(1)}s: ${m}`);
    // ANNEX_NODE_LOGS=<dir>: keep every component's log (the folder itself goes).
    const keepLogs = process.env.ANNEX_NODE_LOGS;
    if (keepLogs) {
      mkdirSync(keepLogs, { recursive: true });
      for (const d of [dir, cp?.dir])
        if (d && existsSync(d))
          for (const f of readdirSync(d))
            if (f.endsWith('.log')) execFileSync('cp', [join(d, f), keepLogs]);
      // And the containers' own logs, of the Pods still there (<ns>_<pod>_<uid>/<container>/).
      if (existsSync(p('pod-logs'))) {
        mkdirSync(join(keepLogs, 'pod-logs'), { recursive: true });
        execFileSync('cp', ['-r', `${p('pod-logs')}/.`, join(keepLogs, 'pod-logs')]);
      }
    }
    // Pods first, so that the runtime unwinds its own mounts and network namespaces.
    if (holderPid && existsSync(sock)) {
      const r = crictl(['rmp', '--all', '--force']);
      say(`crictl rmp: ${r.code} ${r.stdout.trim()} ${r.stderr.trim()}`);
    }
    await stopInReverse(children);
    say('children stopped');
    await cp?.stop();
    say('control plane stopped');
    hostForward?.kill('SIGKILL');
    await killNamespaceAndCgroup(netns, holderPid, cgroupRoot);
    say('namespace and cgroup processes killed');
    try {
      if (holderPid) process.kill(holderPid, 'SIGKILL');
    } catch {
      // gone
    }
    if (holder && holder.exitCode === null && holder.signalCode === null) {
      const gone = new Promise((r) => holder!.once('exit', r));
      holder.kill('SIGKILL');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 3000))]);
    }
    say('holder gone');
    removeCgroupRoot(cgroupRoot);
    rmSync(dir, { recursive: true, force: true });
    say('done');
  };

  const leftovers = () => nodeLeftovers({ netns, cgroupRoot, dir, hostIptables, hostLinks });

  try {
    // --- the namespaces: one holder process ---
    ({ holder, pid: holderPid } = await startHolder({
      cgroupMountpoint: p('cg'),
      nodeIp: NODE_IP,
      serviceCidr: SERVICE_CIDR,
    }));
    netns = readlinkSync(`/proc/${holderPid}/ns/net`);
    lap('namespaces');

    // --- the control plane, inside; the host reaches kube-apiserver through a socket ---
    const version = pinnedVersions().kubernetes;
    // kube-apiserver reaches the kubelet at the node's InternalIP (by default it tries the
    // Hostname first: a DNS lookup that, in this namespace, has no route to go anywhere).
    cp = new ControlPlane(cpBin, version, [
      '--kubelet-preferred-address-types=InternalIP',
      // Pods reach kube-apiserver as the `kubernetes` Service (10.0.0.1:443): it listens on
      // the node address too and writes that address (not loopback, which Endpoints refuse)
      // as the Service's endpoint. These override the control plane's loopback-only flags.
      '--bind-address=0.0.0.0',
      `--advertise-address=${NODE_IP}`,
      '--endpoint-reconciler-type=lease',
    ]);
    const cluster = await cp.start(log, {
      wrap: nsenter(),
      controllerManager: {
        controllers: [
          // EndpointSlices for kube-proxy (and annex's peer discovery).
          'endpointslice-controller',
          // A Deployment's ReplicaSets and their Pods; the owner references' cascade on delete.
          'deployment-controller',
          'replicaset-controller',
          'garbage-collector-controller',
          // A deleted Namespace's content, then the Namespace.
          'namespace-controller',
          // `default` in every namespace, and kube-root-ca.crt: with it the kubelet mounts
          // a Pod's ServiceAccount token (TokenRequest, signed with the API server's key).
          'serviceaccount-controller',
          'root-ca-certificate-publisher-controller',
          // Lifts the not-ready taint the kubelet registers with, once the node is Ready.
          'node-lifecycle-controller',
          // HPAs, on metrics.k8s.io (annex when registerMetricsK8sIo) and external metrics.
          'horizontal-pod-autoscaler-controller',
          // PodDisruptionBudgets' status (disruptionsAllowed): without it every eviction
          // covered by the shipped PDB is refused, so `kubectl drain` could never evict.
          'disruption-controller',
        ],
      },
      beforeReady: async (port) => {
        const fwd = await forwardApiServer(nsenter(), join(dir, `api-${port}.sock`), port);
        children.unshift(fwd.inside); // stopped last among the children
        hostForward = fwd.host;
      },
    });
    lap('control plane');

    // --- the node's identity: a client certificate of group system:nodes ---
    opensslLeaf(
      cluster.dir,
      'node',
      'client-ca',
      `/O=system:nodes/CN=system:node:${NODE_NAME}`,
      CLIENT_EXT,
    );
    const nodeKubeconfig = p('kubelet.kubeconfig');
    writeKubeconfig(nodeKubeconfig, {
      server: cluster.server,
      caFile: cluster.servingCaFile,
      user: `system:node:${NODE_NAME}`,
      certFile: join(cluster.dir, 'node.crt'),
      keyFile: join(cluster.dir, 'node.key'),
    });
    // No Node authorizer in this control plane (RBAC only): the system:node role, bound to
    // the group, as kubeadm's clusters did before the Node authorizer.
    execFileSync(cluster.kubectl, [
      '--kubeconfig',
      cluster.adminKubeconfig,
      'create',
      'clusterrolebinding',
      'annex-nodes',
      '--clusterrole=system:node',
      '--group=system:nodes',
    ]);

    // --- containerd ---
    writeContainerdConfig({ dir, sock, bin, pauseImage: PAUSE_IMAGE, podCidr: POD_CIDR });
    const containerd = daemon('containerd', join(bin, 'containerd'), [
      '--config',
      p('containerd.toml'),
    ]);
    await waitFor(
      () => existsSync(sock) && crictl(['info']).code === 0,
      60_000,
      () =>
        `containerd did not serve CRI (exit ${containerd.exitCode}); see ${p('containerd.log')}`,
    );
    for (const img of ['pause', 'hello', 'coredns'])
      run(join(bin, 'ctr'), [
        '-a',
        sock,
        '-n',
        'k8s.io',
        'images',
        'import',
        join(images, `${img}.tar`),
      ]);
    lap('containerd + images');
    for (const archive of opts.images ?? [])
      run(join(bin, 'ctr'), ['-a', sock, '-n', 'k8s.io', 'images', 'import', archive]);
    if (opts.images?.length) lap('more images imported');

    // --- kubelet: its cgroup root must exist in every hierarchy; cpuset needs cpus/mems ---
    for (const h of cgroupHierarchies()) {
      mkdirSync(join(h, cgroupRoot), { recursive: true });
      if (existsSync(join(h, 'cpuset.cpus')))
        for (const f of ['cpuset.cpus', 'cpuset.mems'])
          writeFileSync(join(h, cgroupRoot, f), readFileSync(join(h, f)));
    }
    writeKubeletConfig(p('kubelet.yaml'), {
      dir,
      sock,
      cgroupRoot,
      nodeIp: NODE_IP,
      podCidr: POD_CIDR,
      clusterDns: CLUSTER_DNS_IP,
      clusterDomain: CLUSTER_DOMAIN,
    });
    const kubelet = daemon('kubelet', join(bin, 'kubelet'), [
      `--config=${p('kubelet.yaml')}`,
      `--kubeconfig=${nodeKubeconfig}`,
      `--root-dir=${p('kubelet')}`,
      `--cert-dir=${p('kubelet', 'pki')}`,
      `--hostname-override=${NODE_NAME}`,
      `--node-ip=${NODE_IP}`,
      '--v=2',
    ]);
    const kubectl = (args: string[], input?: string) =>
      spawnSync(cluster.kubectl, ['--kubeconfig', cluster.adminKubeconfig, ...args], {
        encoding: 'utf8',
        input,
      });
    await waitFor(
      () =>
        kubectl([
          'get',
          'node',
          NODE_NAME,
          '-o',
          'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
        ]).stdout === 'True',
      120_000,
      () =>
        `node ${NODE_NAME} not Ready (kubelet exit ${kubelet.exitCode}); see ${p('kubelet.log')}`,
    );
    lap('kubelet Ready');

    /** A control-plane component's client identity: its leaf certificate and kubeconfig. */
    const componentKubeconfig = (component: string, leaf: string, user: string) => {
      opensslLeaf(cluster.dir, leaf, 'client-ca', `/CN=${user}`, CLIENT_EXT);
      const file = p(`${component}.kubeconfig`);
      writeKubeconfig(file, {
        server: cluster.server,
        caFile: cluster.servingCaFile,
        user,
        certFile: join(cluster.dir, `${leaf}.crt`),
        keyFile: join(cluster.dir, `${leaf}.key`),
      });
      return file;
    };

    // --- kube-proxy (iptables mode, inside the namespace) as system:kube-proxy ---
    const proxyKubeconfig = componentKubeconfig('kube-proxy', 'kube-proxy', 'system:kube-proxy');
    writeFileSync(
      p('kube-proxy.yaml'),
      JSON.stringify({
        apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
        kind: 'KubeProxyConfiguration',
        mode: 'iptables',
        clientConnection: { kubeconfig: proxyKubeconfig },
        hostnameOverride: NODE_NAME,
        clusterCIDR: POD_CIDR,
        bindAddress: NODE_IP,
        healthzBindAddress: '127.0.0.1:10256',
        metricsBindAddress: '127.0.0.1:10249',
        // No conntrack sysctl writes (namespaced values; nothing to tune for a test).
        conntrack: { maxPerCore: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      }),
    );
    const proxy = daemon('kube-proxy', join(bin, 'kube-proxy'), [
      `--config=${p('kube-proxy.yaml')}`,
      '--v=2',
    ]);
    await waitFor(
      () => exec('iptables-save', ['-t', 'nat']).stdout.includes('KUBE-SERVICES'),
      60_000,
      () => `kube-proxy wrote no rules (exit ${proxy.exitCode}); see ${p('kube-proxy.log')}`,
    );
    lap('kube-proxy');

    // --- kube-scheduler (as system:kube-scheduler: the bootstrap binding applies) ---
    const schedulerKubeconfig = componentKubeconfig(
      'kube-scheduler',
      'scheduler',
      'system:kube-scheduler',
    );
    daemon('kube-scheduler', join(bin, 'kube-scheduler'), [
      `--kubeconfig=${schedulerKubeconfig}`,
      `--authentication-kubeconfig=${schedulerKubeconfig}`,
      `--authorization-kubeconfig=${schedulerKubeconfig}`,
      '--leader-elect=false',
      '--v=2',
      '--bind-address=127.0.0.1',
      '--secure-port=0',
      '--profiling=false',
    ]);
    lap('kube-scheduler started');

    // --- cluster DNS: applied, not awaited (a test that resolves names calls dnsReady) ---
    const dns = kubectl(
      ['apply', '-f', '-', '--server-side'],
      JSON.stringify(clusterDnsManifest()),
    );
    if (dns.status !== 0) throw new Error(`cluster DNS: ${dns.stderr}`);
    const dnsReady = async (ms = 90_000) => {
      const rollout = kubectl([
        '-n',
        'kube-system',
        'rollout',
        'status',
        'deployment/coredns',
        `--timeout=${ms / 1000}s`,
      ]);
      if (rollout.status !== 0)
        throw new Error(`CoreDNS not available: ${rollout.stderr}; see ${p('pod-logs')}`);
    };

    return {
      dir,
      cluster,
      cgroupRoot,
      exec,
      crictl,
      dnsReady,
      stop,
      leftovers,
      timings,
    };
  } catch (e) {
    (e as Error).message += `\n(node state kept until stop: ${dir}; logs there)`;
    const keep = process.env.ANNEX_NODE_KEEP === '1';
    if (!keep) {
      // Copy the logs out before the folder goes.
      const logs = join(tmpdir(), `annex-node-failed-${id}`);
      mkdirSync(logs, { recursive: true });
      for (const f of readdirSync(dir)) if (f.endsWith('.log')) execFileSync('cp', [p(f), logs]);
      if (cp)
        for (const f of readdirSync(cp.dir))
          if (f.endsWith('.log')) execFileSync('cp', [join(cp.dir, f), logs]);
      (e as Error).message += `\n(logs copied to ${logs})`;
      await stop();
    }
    throw e;
  }
}
