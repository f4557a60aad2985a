// Two annex replicas (two processes on loopback) share one CA through a Secret and a
// Lease (tls.secret); the API server reaches them through one port that round-robins TCP
// connections between them, as a ClusterIP Service does. Under steady load through the
// real API server (Pod creations, which both webhooks see with failurePolicy Fail, and
// aggregated-API reads), a CA rotation runs start to end; every failed request is counted.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
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
} from '../cluster/harness.js';
import { eventually } from '../cluster/pod.js';

const SECRET = 'annex-rotation-tls';
const OVERLAP_SECONDS = 4;

/** A TCP round-robin over the replicas' ports (what kube-proxy does for a Service). */
function roundRobin(port: number, targets: number[]): Promise<Server> {
  let next = 0;
  const server = createServer((down: Socket) => {
    const up = connect(targets[next++ % targets.length]!, '127.0.0.1');
    down.pipe(up).pipe(down);
    const end = () => {
      down.destroy();
      up.destroy();
    };
    down.on('error', end);
    up.on('error', end);
  });
  return new Promise((r) => server.listen(port, '127.0.0.1', () => r(server)));
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

describeCluster('one CA for two replicas: rotation under load', (c) => {
  const replicas: { proc: ChildProcess; dir: string; port: number; out: () => string }[] = [];
  let lb: Server;
  let ns: string;
  beforeAll(async () => {
    await ensureAnnexService();
    ns = await createNamespace('annex-rotation');
    const lbPort = await freePort();
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'annex-replica-'));
      const config = {
        server: { host: '127.0.0.1', port, shutdownDelaySeconds: 0 },
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
      replicas.push({ proc, dir, port, out: () => out });
    }
    lb = await roundRobin(
      lbPort,
      replicas.map((r) => r.port),
    );
    await eventually(
      async () => replicas.every((r) => r.out().includes('"msg":"annex is serving"')),
      60_000,
      'both replicas to serve',
    );
    // Registered by the replicas once ready (metrics: after two samples).
    await eventually(
      async () =>
        (
          await kubectl([
            'wait',
            '--for=condition=Available',
            'apiservice/v1beta1.metrics.annex.dev',
            '--timeout=5s',
          ])
        ).code === 0,
      60_000,
      'the APIService to be Available',
    );
  });
  afterAll(async () => {
    for (const r of replicas) {
      r.proc.kill('SIGTERM');
      await new Promise((res) => (r.proc.exitCode !== null ? res(null) : r.proc.on('exit', res)));
      rmSync(r.dir, { recursive: true, force: true });
    }
    lb?.close();
    for (const o of [
      'validatingwebhookconfiguration/annex-names',
      'mutatingwebhookconfiguration/annex-defaults',
      'apiservice/v1beta1.metrics.annex.dev',
    ])
      await kubectl(['delete', o, '--ignore-not-found']);
    await kubectl(['-n', 'annex-system', 'delete', 'secret,lease', SECRET, '--ignore-not-found']);
  });

  it('both replicas serve a leaf from the one CA in the Secret', async () => {
    const secret = JSON.parse(
      await kubectlOk(['-n', 'annex-system', 'get', 'secret', SECRET, '-o', 'json']),
    );
    const ca = pems(Buffer.from(secret.data['ca.crt'], 'base64').toString());
    expect(ca).toHaveLength(1);
    for (const r of replicas)
      expect((await servingCert(r.port)).verify(ca[0]!.publicKey)).toBe(true);
  });

  it('rotates the CA with 0 failed requests through the API server', async () => {
    const before = JSON.parse(
      await kubectlOk(['-n', 'annex-system', 'get', 'secret', SECRET, '-o', 'json']),
    );
    const oldCa = Buffer.from(before.data['ca.crt'], 'base64').toString();
    let stop = false;
    const counts = { sent: 0, failed: 0, failures: [] as string[] };
    const worker = async (w: number) => {
      for (let i = 0; !stop; i++) {
        counts.sent++;
        const r =
          i % 2 === 0
            ? await apiRequest('POST', `/api/v1/namespaces/${ns}/pods`, {
                body: {
                  apiVersion: 'v1',
                  kind: 'Pod',
                  metadata: { name: `load-${w}-${i}` },
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
    await new Promise((r) => setTimeout(r, 2000));
    const started = Date.now();
    await kubectlOk(['-n', 'annex-system', 'annotate', 'secret', SECRET, 'annex.dev/rotate=now']);
    // publishing → switched → stable, each after OVERLAP_SECONDS.
    const phases = new Set<string>();
    await eventually(
      async () => {
        const s = JSON.parse(
          await kubectlOk(['-n', 'annex-system', 'get', 'secret', SECRET, '-o', 'json']),
        );
        const phase = s.metadata.annotations['annex.dev/ca-phase'];
        phases.add(phase);
        return phase === 'stable' && Buffer.from(s.data['ca.crt'], 'base64').toString() !== oldCa;
      },
      60_000,
      'the rotation to finish',
    );
    const rotationMs = Date.now() - started;
    await new Promise((r) => setTimeout(r, 2000)); // and after the old CA is dropped
    stop = true;
    await Promise.all(load);
    console.log(
      `CA rotation under load: ${counts.sent} requests sent, ${counts.failed} failed, rotation took ${rotationMs} ms`,
    );
    expect(counts.failures).toEqual([]);
    expect(counts.sent).toBeGreaterThan(100);
    expect([...phases]).toEqual(expect.arrayContaining(['publishing', 'switched', 'stable']));

    // Every caBundle holds the new CA alone, and both replicas serve a leaf it signed.
    const after = JSON.parse(
      await kubectlOk(['-n', 'annex-system', 'get', 'secret', SECRET, '-o', 'json']),
    );
    const newCa = pems(Buffer.from(after.data['ca.crt'], 'base64').toString());
    expect(newCa).toHaveLength(1);
    const hook = JSON.parse(
      await kubectlOk(['get', 'validatingwebhookconfiguration', 'annex-names', '-o', 'json']),
    );
    expect(hook.webhooks[0].clientConfig.caBundle).toBe(after.data['ca.crt']);
    for (const r of replicas)
      expect((await servingCert(r.port)).verify(newCa[0]!.publicKey)).toBe(true);
    // One writer at a time: each step was written once, by whichever replica held the Lease.
    const writes = replicas.map(
      (r) => (r.out().match(/"shared certificates updated"/g) ?? []).length,
    );
    expect(writes.reduce((a, b) => a + b)).toBe(4); // create, publish, switch, drop-old
  });
});
