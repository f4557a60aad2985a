// Two annex replicas (two processes on loopback) share one CA through a Secret and a
// Lease (tls.secret); the API server reaches them through one port that round-robins TCP
// connections over the ready ones, as a ClusterIP Service does. Under steady load through
// the real API server (Pod creations, which both webhooks see with failurePolicy Fail, and
// aggregated-API reads), a CA rotation runs start to end, then a rolling update replaces
// both replicas (surge one, drain one); every failed request is counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ensureAnnexService } from '../cluster/annex.js';
import { cli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';
import {
  apiRequest,
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';
import { eventually } from '../cluster/pod.js';

const SECRET = 'annex-rotation-tls';
const OVERLAP_SECONDS = 4;

function readyz(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsGet(
      { host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, timeout: 500 },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

/**
 * A TCP round-robin over the ready replicas: kube-proxy plus the endpoints controller
 * (a replica whose /readyz fails leaves the rotation within 200 ms).
 */
async function roundRobin(port: number, ports: () => number[]) {
  let next = 0;
  let ready: number[] = [];
  const poll = setInterval(() => {
    void Promise.all(ports().map(async (p) => ((await readyz(p)) ? p : 0))).then(
      (r) => (ready = r.filter((p) => p !== 0)),
    );
  }, 200);
  const server = createServer((down: Socket) => {
    const targets = ready.length ? ready : ports();
    const up = connect(targets[next++ % targets.length]!, '127.0.0.1');
    down.pipe(up).pipe(down);
    const end = () => {
      down.destroy();
      up.destroy();
    };
    down.on('error', end);
    up.on('error', end);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
  return { server, ready: () => ready, stop: () => clearInterval(poll) };
}

/** The serving certificate a replica presents now. */
function servingCert(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect(
      { host: '127.0.0.1', port, servername: 'annex.annex-system.svc', rejectUnauthorized: false },
      () => {
        resolve(new X509Certificate(s.getPeerX509Certificate()!.raw));
        s.end();
      },
    );
    s.on('error', reject);
  });
}

const pems = (bundle: string) =>
  bundle
    .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)!
    .map((p) => new X509Certificate(p));

const secretCa = async () => {
  const s = JSON.parse(
    await kubectlOk(['-n', 'annex-system', 'get', 'secret', SECRET, '-o', 'json']),
  );
  return { secret: s, pem: Buffer.from(s.data['ca.crt'], 'base64').toString() };
};

describeCluster('one CA for two replicas: rotation and rollout under load', (c) => {
  type Replica = { proc: ChildProcess; dir: string; port: number; out: () => string };
  const replicas: Replica[] = [];
  let lb: Awaited<ReturnType<typeof roundRobin>>;
  let ns: string;
  let lbPort: number;
  let writes = 0;

  async function startReplica(): Promise<Replica> {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'annex-replica-'));
    const config = {
      server: { host: '127.0.0.1', port, shutdownDelaySeconds: 1 },
      tls: {
        dir: join(dir, 'certs'),
        secret: SECRET,
        syncIntervalSeconds: 0.5,
        overlapSeconds: OVERLAP_SECONDS,
      },
      registration: { apply: true, servicePort: lbPort },
      kube: { kubeconfig: c.adminKubeconfig },
      metrics: { source: 'local', scrapeIntervalSeconds: 1 },
      log: { level: 'info' },
    };
    writeFileSync(join(dir, 'annex.yaml'), stringify(config));
    const proc = spawn(process.execPath, [cli, 'serve', '--config', join(dir, 'annex.yaml')], {
      env: { ...process.env, KUBECONFIG: '' },
    });
    let out = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    const r = { proc, dir, port, out: () => out };
    replicas.push(r);
    return r;
  }

  async function stopReplica(r: Replica): Promise<number | null> {
    const exited = new Promise<number | null>((res) =>
      r.proc.exitCode !== null || r.proc.signalCode !== null
        ? res(r.proc.exitCode)
        : r.proc.on('exit', (code) => res(code)),
    );
    r.proc.kill('SIGTERM');
    const code = await exited;
    writes += (r.out().match(/"shared certificates updated"/g) ?? []).length;
    replicas.splice(replicas.indexOf(r), 1);
    rmSync(r.dir, { recursive: true, force: true });
    return code;
  }

  /** Pod creations (both webhooks, failurePolicy Fail) and aggregated reads, 4 at a time. */
  async function underLoad(during: () => Promise<void>) {
    let stop = false;
    const counts = { sent: 0, failed: 0, failures: [] as string[] };
    const worker = async (w: number) => {
      while (!stop) {
        counts.sent++;
        const r =
          counts.sent % 2 === 0
            ? await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, {
                body: {
                  apiVersion: 'v1',
                  kind: 'Pod',
                  metadata: { generateName: `load-${w}-` },
                  spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] },
                },
              })
            : await apiRequest('GET', '/apis/metrics.annex.dev/v1beta1/nodes');
        if (r.status !== 201 && r.status !== 200) {
          counts.failed++;
          if (counts.failures.length < 5)
            counts.failures.push(`${r.status} ${r.body.slice(0, 300)}`);
        }
      }
    };
    const load = [0, 1, 2, 3].map(worker);
    await new Promise((r) => setTimeout(r, 1000));
    try {
      await during();
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      stop = true;
      await Promise.all(load);
    }
    return counts;
  }

  beforeAll(async () => {
    await ensureAnnexService();
    ns = await createNamespace('annex-rotation');
    lbPort = await freePort();
    for (let i = 0; i < 2; i++) await startReplica();
    lb = await roundRobin(lbPort, () => replicas.map((r) => r.port));
    await eventually(
      async () => replicas.every((r) => r.out().includes('"msg":"annex is serving"')),
      60_000,
      'both replicas to serve',
    );
    // Registered by the replicas once ready (metrics: after two samples).
    await waitForCondition(['apiservice/v1beta1.metrics.annex.dev'], 'Available');
  });
  afterAll(async () => {
    for (const r of [...replicas]) await stopReplica(r);
    lb?.stop();
    lb?.server.close();
    for (const o of [
      'validatingwebhookconfiguration/annex-names',
      'mutatingwebhookconfiguration/annex-defaults',
      'apiservice/v1beta1.metrics.annex.dev',
    ])
      await kubectl(['delete', o, '--ignore-not-found']);
    await kubectl(['-n', 'annex-system', 'delete', 'secret,lease', SECRET, '--ignore-not-found']);
  });

  it('both replicas serve a leaf from the one CA in the Secret', async () => {
    const ca = pems((await secretCa()).pem);
    expect(ca).toHaveLength(1);
    for (const r of replicas)
      expect((await servingCert(r.port)).verify(ca[0]!.publicKey)).toBe(true);
  });

  it('rotates the CA with 0 failed requests through the API server', async () => {
    const oldCa = (await secretCa()).pem;
    let rotationMs = 0;
    const phases = new Set<string>();
    const counts = await underLoad(async () => {
      const started = Date.now();
      await kubectlOk(['-n', 'annex-system', 'annotate', 'secret', SECRET, 'annex.dev/rotate=now']);
      // publishing → switched → stable, each after OVERLAP_SECONDS.
      await eventually(
        async () => {
          const { secret, pem } = await secretCa();
          const phase = secret.metadata.annotations['annex.dev/ca-phase'];
          phases.add(phase);
          return phase === 'stable' && pem !== oldCa;
        },
        60_000,
        'the rotation to finish',
      );
      rotationMs = Date.now() - started;
    });
    console.log(
      `CA rotation under load: ${counts.sent} requests sent, ${counts.failed} failed, rotation took ${rotationMs} ms`,
    );
    expect(counts.failures).toEqual([]);
    expect(counts.sent).toBeGreaterThan(100);
    expect([...phases]).toEqual(expect.arrayContaining(['publishing', 'switched', 'stable']));

    // Every caBundle holds the new CA alone, and both replicas serve a leaf it signed.
    const { secret, pem } = await secretCa();
    const newCa = pems(pem);
    expect(newCa).toHaveLength(1);
    const hook = JSON.parse(
      await kubectlOk(['get', 'validatingwebhookconfiguration', 'annex-names', '-o', 'json']),
    );
    expect(hook.webhooks[0].clientConfig.caBundle).toBe(secret.data['ca.crt']);
    for (const r of replicas)
      expect((await servingCert(r.port)).verify(newCa[0]!.publicKey)).toBe(true);
  });

  it('a rolling update (maxUnavailable 0: surge one, then drain one) fails no request', async () => {
    const before = (await secretCa()).pem;
    const codes: (number | null)[] = [];
    const counts = await underLoad(async () => {
      for (const old of [...replicas]) {
        const fresh = await startReplica();
        await eventually(
          async () => lb.ready().includes(fresh.port),
          60_000,
          'the new replica to be ready',
        );
        codes.push(await stopReplica(old));
      }
    });
    console.log(`rolling update under load: ${counts.sent} requests sent, ${counts.failed} failed`);
    expect(counts.failures).toEqual([]);
    expect(codes).toEqual([0, 0]);
    // The new replicas loaded the CA; none minted its own.
    expect((await secretCa()).pem).toBe(before);
    for (const r of replicas)
      writes += (r.out().match(/"shared certificates updated"/g) ?? []).length;
    // One writer at a time, each step written once: create, publish, switch, drop-old.
    expect(writes).toBe(4);
  });
});
