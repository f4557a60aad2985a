// A real etcd + kube-apiserver on loopback, started once per test run.
// Flags follow docs/architecture.md ("The test control plane"): RBAC, a client CA, service-account keys, the
// ServiceAccount admission plugin left on, and the aggregation layer's front-proxy flags.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admissionConfiguration, webhookClientKubeconfig } from '../manifests/admission-client.js';
import { makePki } from './pki.js';
import { stopInReverse } from './stop.js';
import { writeKubeconfig } from './kubeconfig.js';

export interface ClusterInfo {
  /** https://127.0.0.1:<port> */
  server: string;
  /** etcd's client URL, http://127.0.0.1:<port>: for tests that read what is stored. */
  etcd: string;
  version: string;
  dir: string;
  binDir: string;
  kubectl: string;
  adminKubeconfig: string;
  /** "jane": a valid client certificate, no RBAC bindings. */
  userKubeconfig: string;
  servingCaFile: string;
  clientCaFile: string;
  frontProxyCaFile: string;
  /** Front-proxy client certificate (CN=front-proxy-client), as the aggregator presents. */
  frontProxyClientCert: string;
  frontProxyClientKey: string;
  /**
   * The CA of the client certificate kube-apiserver presents to every admission webhook
   * (its AdmissionConfiguration names a kubeconfig whose `*` user holds it): what a webhook
   * checking its callers (annex's admission.clientCA) trusts.
   */
  webhookClientCaFile: string;
  /**
   * Where kube-apiserver's pid is. A test restarts it by creating `apiServerRestartFile`,
   * then sending SIGTERM to that pid: the control plane starts it again with the same flags.
   */
  apiServerPidFile: string;
  apiServerRestartFile: string;
}

/** A kube-controller-manager with only these controllers, for the tests that need one. */
export interface ControllerManagerOptions {
  /** Controller names (`deployment-controller`, `horizontal-pod-autoscaler-controller`…). */
  controllers: string[];
  /** More flags (`--horizontal-pod-autoscaler-sync-period=1s`…). */
  args?: string[];
}

export interface ControlPlaneOptions {
  /** Off by default: without it nothing reconciles (the shared test cluster stays inert and fast). */
  controllerManager?: ControllerManagerOptions;
  /**
   * A command prefix every process is started with (a node test's
   * `nsenter -t <pid> -n -m --`, to run the control plane inside its namespaces).
   */
  wrap?: string[];
  /** Called with the API server's port before waiting for it (to expose it, e.g. a forward). */
  beforeReady?: (apiPort: number) => Promise<void>;
}

/**
 * A free port for a server to listen on, chosen below the kernel's ephemeral range: a port
 * from that range (what listen(0) gives) can be taken as the source port of any outgoing
 * connection between this check and the server's bind — with thousands of connections in
 * a suite, a kube-apiserver once died of `address already in use` that way.
 */
export async function freePort(): Promise<number> {
  const [low] = ephemeralRange();
  const [from, to] = low > 12_000 ? [10_000, low] : [61_000, 65_536];
  for (let i = 0; i < 100; i++) {
    const port = from + Math.floor(Math.random() * (to - from));
    // Not one this process handed out already (still free until its server starts).
    if (!given.has(port) && (await canListen(port))) {
      given.add(port);
      return port;
    }
  }
  throw new Error(`no free port found in ${from}-${to - 1} after 100 tries`);
}

const given = new Set<number>();

function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high) return [low, high];
  } catch {
    // Not Linux: the IANA dynamic range, which macOS and Windows use.
  }
  return [49_152, 65_535];
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

export class ControlPlane {
  private procs: ChildProcess[] = [];
  private onExit = () => this.killNow();
  readonly dir = mkdtempSync(join(tmpdir(), 'annex-cp-'));
  info?: ClusterInfo;

  constructor(
    private readonly binDir: string,
    private readonly version: string,
    /** More kube-apiserver flags (a bench's --watch-cache=false). */
    private readonly apiServerArgs: string[] = [],
  ) {
    process.once('exit', this.onExit);
  }

  async start(log: (line: string) => void, opts: ControlPlaneOptions = {}): Promise<ClusterInfo> {
    const t0 = Date.now();
    this.wrap = opts.wrap ?? [];
    const pki = makePki(this.dir);
    const p = (f: string) => join(this.dir, f);
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];

    this.spawn('etcd', [
      '--name=annex-test',
      `--data-dir=${p('etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
      `--initial-cluster=annex-test=http://127.0.0.1:${peerPort}`,
      '--unsafe-no-fsync=true',
      '--log-level=warn',
    ]);
    const server = `https://127.0.0.1:${apiPort}`;
    const admissionConfig = writeAdmissionConfig(this.dir);
    this.spawn('kube-apiserver', [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      '--endpoint-reconciler-type=none', // loopback addresses may not be written to Endpoints
      `--cert-dir=${p('pki')}`,
      `--tls-cert-file=${p('apiserver.crt')}`,
      `--tls-private-key-file=${p('apiserver.key')}`,
      `--client-ca-file=${pki.clientCa}`,
      '--authorization-mode=RBAC',
      `--service-account-issuer=https://kubernetes.default.svc`,
      `--service-account-key-file=${p('sa.pub')}`,
      `--service-account-signing-key-file=${p('sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      `--requestheader-client-ca-file=${pki.frontProxyCa}`,
      '--requestheader-allowed-names=front-proxy-client',
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${p('front-proxy-client.crt')}`,
      `--proxy-client-key-file=${p('front-proxy-client.key')}`,
      `--admission-control-config-file=${admissionConfig}`,
      '--profiling=false',
      ...this.apiServerArgs,
    ]);

    const adminKubeconfig = p('admin.kubeconfig');
    const userKubeconfig = p('user.kubeconfig');
    writeKubeconfig(adminKubeconfig, {
      server,
      caFile: pki.servingCa,
      user: 'annex-admin',
      certFile: p('admin.crt'),
      keyFile: p('admin.key'),
    });
    writeKubeconfig(userKubeconfig, {
      server,
      caFile: pki.servingCa,
      user: 'jane',
      certFile: p('user.crt'),
      keyFile: p('user.key'),
    });

    this.readyProbe = [server, p('admin.crt'), p('admin.key'), pki.servingCa];
    await opts.beforeReady?.(apiPort);
    await this.waitReady();
    const cm = opts.controllerManager;
    if (cm) {
      this.spawn('kube-controller-manager', [
        `--kubeconfig=${adminKubeconfig}`,
        `--controllers=${cm.controllers.join(',')}`,
        // Each controller as its own ServiceAccount (TokenRequest), so its RBAC is the real one.
        '--use-service-account-credentials=true',
        // This control plane's own files: the CA published as kube-root-ca.crt in every
        // namespace, and the key legacy ServiceAccount token Secrets are signed with.
        `--root-ca-file=${pki.servingCa}`,
        `--service-account-private-key-file=${p('sa.key')}`,
        '--leader-elect=false',
        '--secure-port=0',
        '--profiling=false',
        ...(cm.args ?? []),
      ]);
    }
    log(
      `control plane${cm ? ' (with kube-controller-manager)' : ''} ready at ${server} in ${((Date.now() - t0) / 1000).toFixed(1)}s (kubernetes v${this.version})`,
    );
    this.info = {
      server,
      etcd: `http://127.0.0.1:${etcdPort}`,
      version: this.version,
      dir: this.dir,
      binDir: this.binDir,
      kubectl: join(this.binDir, 'kubectl'),
      adminKubeconfig,
      userKubeconfig,
      servingCaFile: pki.servingCa,
      clientCaFile: pki.clientCa,
      frontProxyCaFile: pki.frontProxyCa,
      frontProxyClientCert: p('front-proxy-client.crt'),
      frontProxyClientKey: p('front-proxy-client.key'),
      webhookClientCaFile: p('webhook-client-ca.crt'),
      apiServerPidFile: p('kube-apiserver.pid'),
      apiServerRestartFile: p('kube-apiserver.restart'),
    };
    return this.info;
  }

  /**
   * Stops one process and keeps it stopped (a fault test's outage) until resume(): its
   * exit is neither a crash nor a restart.
   */
  async pause(name: 'etcd' | 'kube-apiserver'): Promise<void> {
    const child = this.running.get(name);
    if (!child) throw new Error(`${name} is not running`);
    this.paused.add(name);
    const gone = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await gone;
    this.procs = this.procs.filter((c) => c !== child);
    this.running.delete(name);
  }

  /** Starts a paused process again (same flags, ports, data); kube-apiserver: until ready. */
  async resume(name: 'etcd' | 'kube-apiserver'): Promise<void> {
    if (!this.paused.delete(name)) throw new Error(`${name} is not paused`);
    this.spawn(name, this.argsOf.get(name)!);
    if (name === 'kube-apiserver') await this.waitReady();
  }

  private wrap: string[] = [];
  private readonly paused = new Set<string>();
  private readonly argsOf = new Map<string, string[]>();
  private readonly running = new Map<string, ChildProcess>();

  private spawn(name: string, args: string[]): void {
    this.argsOf.set(name, args);
    const out = openSync(join(this.dir, `${name}.log`), 'a');
    const [cmd, ...pre] = [...this.wrap, join(this.binDir, name)];
    const child = spawn(cmd!, [...pre, ...args], { stdio: ['ignore', out, out] });
    writeFileSync(join(this.dir, `${name}.pid`), String(child.pid));
    this.running.set(name, child);
    child.once('exit', (code, signal) => {
      if (this.stopping || this.paused.has(name)) return;
      const restart = join(this.dir, `${name}.restart`);
      if (existsSync(restart)) {
        // A test asked for a restart: same flags, same ports, same etcd.
        rmSync(restart);
        this.procs = this.procs.filter((c) => c !== child);
        this.spawn(name, args);
        return;
      }
      // The folder is deleted on stop, so the message carries the log's last lines itself.
      const log = join(this.dir, `${name}.log`);
      this.crashed = `${name} exited (${signal ?? code}); its log ends:\n${logTail(log, 20)}`;
    });
    this.procs.push(child);
  }

  private stopping = false;
  private readyProbe?: [server: string, cert: string, key: string, ca: string];
  private crashed?: string;

  /** Polls /readyz with the admin certificate until every check passes (or 90 s). */
  private async waitReady(): Promise<void> {
    const { request } = await import('node:https');
    const [server, cert, key, ca] = this.readyProbe!;
    const opts = { cert: readFileSync(cert), key: readFileSync(key), ca: readFileSync(ca) };
    const deadline = Date.now() + 90_000;
    let last = 'no answer';
    while (Date.now() < deadline) {
      if (this.crashed) throw new Error(this.crashed);
      const ok = await new Promise<boolean>((resolve) => {
        const req = request(`${server}/readyz`, { ...opts, timeout: 2000 }, (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => {
            last = `${res.statusCode} ${body.slice(0, 300)}`;
            resolve(res.statusCode === 200);
          });
        });
        req.on('error', (e) => {
          last = e.message;
          resolve(false);
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.end();
      });
      if (ok) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`kube-apiserver not ready after 90s: ${last}; logs in ${this.dir}`);
  }

  private killNow(): void {
    this.stopping = true;
    for (const c of this.procs) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Stops kube-apiserver, then etcd, and deletes every file the run made. */
  async stop(): Promise<void> {
    this.stopping = true;
    await stopInReverse(this.procs);
    rmSync(this.dir, { recursive: true, force: true });
    process.off('exit', this.onExit);
  }
}

/**
 * An AdmissionConfiguration giving the webhook admission plugins a kubeconfig whose `*`
 * user (the default for every webhook host) presents a client certificate from its own CA
 * (rendered as `annex certs admission-client` renders it). Harmless to webhooks that do not
 * check callers; lets a test prove one that does.
 */
function writeAdmissionConfig(dir: string): string {
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  const kubeconfig = join(dir, 'admission-webhooks.kubeconfig');
  const client = { certPem: read('webhook-client.crt'), keyPem: read('webhook-client.key') };
  writeFileSync(kubeconfig, stringify(webhookClientKubeconfig(['*'], client)), { mode: 0o600 });
  const file = join(dir, 'admission-config.yaml');
  writeFileSync(file, stringify(admissionConfiguration(kubeconfig)));
  return file;
}

/** The last `lines` lines of a log file (at most 64 KiB read), or why it could not be read. */
export function logTail(path: string, lines: number): string {
  try {
    const text = readFileSync(path, 'utf8');
    return text.slice(-65_536).trimEnd().split('\n').slice(-lines).join('\n');
  } catch (e) {
    return `(${path} unreadable: ${(e as Error).message})`;
  }
}
