// Operations under load on the real node (issue 22 item 5): annex installed as shipped (two
// replicas, the PDB minAvailable: 1, failurePolicy Fail), a client sending dry-run
// Deployment creates through kube-apiserver at a steady rate (each calls annex's defaults
// and names webhooks through the Service, kube-proxy, the Pods), while
// - `kubectl rollout restart` replaces both Pods (maxSurge 1, maxUnavailable 0);
// - `kubectl drain` of the node evicts one replica and is then refused by the PDB for the
//   other (429), until its timeout; then `kubectl uncordon` and both replicas are back;
// - the CA both replicas share (Secret annex-tls) is rotated, as docs/install.md says.
// On one node the evicted replica's replacement cannot be scheduled while the node is
// cordoned: "0 failed" during the drain means the replica the PDB keeps serves every
// request alone, and the evicted one stops without dropping what it had in flight.
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NODE_NAME, startNode, type Node } from '../cluster/node.js';
import { adminIdentity } from '../soak/aggregated.js';
import { dryRunCreates } from '../soak/apiserver-writes.js';
import { kube } from './kube.js';

const NS = 'annex-system';
const LOAD_NS = 'annex-it-load';
/** Admission requests per second (each one calls two webhooks). */
const RATE = 15;
/** How long `kubectl drain` keeps retrying the refused eviction before giving up. */
const DRAIN_TIMEOUT_S = 30;

const why = inject('nodeSkipReason');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

(why ? describe.skip : describe)(
  `operations under load on a real node${why ? ` (skipped: ${why})` : ''}`,
  () => {
    let node: Node;
    const log = (l: string) => console.error(`operations: ${l}`);
    const { kubectl, kubectlAsync, ok, json, install, eventually } = kube(() => node);
    const pods = () =>
      json(['-n', NS, 'get', 'pods', '-l', 'app.kubernetes.io/name=annex']).items as {
        metadata: { name: string; deletionTimestamp?: string };
        spec: { nodeName?: string };
        status: { phase: string; conditions?: { type: string; status: string }[] };
      }[];
    const ready = (p: ReturnType<typeof pods>[number]) =>
      !p.metadata.deletionTimestamp &&
      !!p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    const available = async () => {
      const r = await kubectlAsync(['-n', NS, 'get', 'deployment', 'annex', '-o', 'json']);
      const d = r.status === 0 ? JSON.parse(r.stdout) : { status: {} };
      return d.status.availableReplicas === 2 && d.status.updatedReplicas === 2;
    };
    /** Runs `f` under the steady load, then asserts no request failed. */
    async function underLoad(what: string, f: () => Promise<void>) {
      const load = dryRunCreates(node.cluster, LOAD_NS, RATE);
      await sleep(3000); // a baseline: the load runs before the operation starts
      const t0 = Date.now();
      try {
        await f();
        await sleep(3000); // and after it
      } finally {
        const figures = await load.stop();
        log(`${what}: ${(Date.now() - t0) / 1000}s; requests ${JSON.stringify(figures)}`);
        results[what] = figures;
      }
      const figures = results[what]!;
      // The rate held (the load shares this process's event loop: nothing here blocks it
      // for long), and nothing failed.
      expect(figures.sent).toBeGreaterThan(0.8 * RATE * ((Date.now() - t0) / 1000 + 3));
      expect(figures.failed, JSON.stringify(figures.failures)).toBe(0);
    }
    const results: Record<string, { sent: number; failed: number; failures: object }> = {};

    beforeAll(async () => {
      node = await startNode((l) => console.error(`node: ${l}`), {
        images: [inject('nodeImage')],
      });
      const installed = install();
      if (installed.status !== 0) throw new Error(`annex install: ${installed.stderr}`);
      await eventually('2 available replicas', 120_000, available);
      ok(['create', 'namespace', LOAD_NS]);
      // The webhooks answer through the Service before the load starts.
      await eventually('the names webhook to deny web.front', 30_000, () =>
        kubectl([
          '-n',
          LOAD_NS,
          'create',
          'deployment',
          'web.front',
          '--image=nginx:1.27',
        ]).stderr.includes('names.annex.dev" denied'),
      );
    });
    afterAll(async () => {
      if (!node) return;
      await node.stop();
      expect(node.leftovers()).toEqual([]);
    });

    it(`kubectl rollout restart at ${RATE} admission requests/s: both Pods replaced, each old one drained and exited by itself; no failed request`, async () => {
      const before = pods().map((p) => p.metadata.name);
      // Each old Pod's log to its end (`logs -f` returns when the container exits): the
      // load runs until both have drained, since the drain is what could fail a request.
      // (rollout status returns once the new Pods are available, the last old one barely
      // signalled.)
      const logs = before.map((p) => kubectlAsync(['-n', NS, 'logs', '-f', p], 200_000));
      await underLoad('rollout restart', async () => {
        const restart = await kubectlAsync(['-n', NS, 'rollout', 'restart', 'deployment/annex']);
        expect(restart.status, restart.stderr).toBe(0);
        const r = await kubectlAsync(
          ['-n', NS, 'rollout', 'status', 'deployment/annex', '--timeout=180s'],
          200_000,
        );
        expect(r.status, r.stderr).toBe(0);
        await Promise.all(logs);
      });
      const after = pods().filter(ready);
      expect(after).toHaveLength(2);
      for (const p of after) expect(before).not.toContain(p.metadata.name);
      // Each old replica shut down by itself ("shut down" is logged just before exit 0),
      // within its grace period (terminationGracePeriodSeconds 30: then the kubelet kills).
      for (const [i, l] of (await Promise.all(logs)).entries()) {
        const events = l.stdout
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, unknown> & { time: number });
        const at = (msg: string) => events.find((e) => e.msg === msg);
        const [signal, draining, drained, down] = [
          'received signal',
          'draining',
          'drained',
          'shut down',
        ].map(at);
        const since = (e?: { time: number }) => (e && signal ? e.time - signal.time : '?');
        log(
          `${before[i]}: signal → draining ${since(draining)} ms (${draining?.open} open), → drained ${since(drained)} ms (destroyed at the deadline ${JSON.stringify(drained?.destroyedAtDeadline)}), → shut down ${since(down)} ms`,
        );
        expect(down, l.stdout.slice(-2000)).toBeDefined();
        expect(down!.time - signal!.time).toBeLessThan(30_000);
      }
    });

    it('kubectl drain at the same rate: one replica evicted, the other kept by the PDB (429) until uncordon; no failed request', async () => {
      const before = pods().filter(ready);
      expect(before).toHaveLength(2);
      let drain: Awaited<ReturnType<typeof kubectlAsync>> | undefined;
      await underLoad('drain (until its timeout) and uncordon', async () => {
        const t0 = Date.now();
        drain = await kubectlAsync(
          [
            'drain',
            NODE_NAME,
            '--ignore-daemonsets',
            '--delete-emptydir-data',
            `--timeout=${DRAIN_TIMEOUT_S}s`,
          ],
          (DRAIN_TIMEOUT_S + 60) * 1000,
        );
        log(`drain: exit ${drain.status} after ${(Date.now() - t0) / 1000}s`);
        // The drain did not finish: the PDB refused the second eviction until the timeout.
        expect(drain.status).not.toBe(0);
        expect(drain.stderr).toContain(
          "Cannot evict pod as it would violate the pod's disruption budget",
        );
        // Exactly one of the two was evicted; the other still serves, on the cordoned node.
        const now = pods();
        const left = now.filter(ready);
        expect(left).toHaveLength(1);
        const kept = left[0]!.metadata.name;
        expect(before.map((p) => p.metadata.name)).toContain(kept);
        // The replacement exists but cannot be scheduled: the only node is cordoned.
        expect(now.filter((p) => !p.spec.nodeName && p.status.phase === 'Pending')).toHaveLength(1);
        expect(json(['get', 'node', NODE_NAME]).spec.unschedulable).toBe(true);
        const pdb = json(['-n', NS, 'get', 'pdb', 'annex']).status;
        expect(pdb).toMatchObject({ currentHealthy: 1, desiredHealthy: 1, disruptionsAllowed: 0 });
        // The refusal itself, as the eviction API answers it.
        const eviction = await evict(kept);
        expect(eviction.status).toBe(429);
        expect(eviction.body).toContain('disruption budget');

        const uncordon = await kubectlAsync(['uncordon', NODE_NAME]);
        expect(uncordon.status, uncordon.stderr).toBe(0);
        const t1 = Date.now();
        await eventually('both replicas back after uncordon', 120_000, available);
        log(`uncordon: 2 available after ${(Date.now() - t1) / 1000}s`);
        expect(pods().map((p) => p.metadata.name)).toContain(kept);
      });
      const lines = drain!.stderr.split('\n').filter((l) => /evict|budget|timeout/i.test(l));
      log(`drain said: ${[...new Set(lines)].slice(0, 4).join(' | ')}`);
      expect(pods().filter(ready)).toHaveLength(2);
    });

    it('a CA rotation (`annex.dev/rotate=now` on the Secret) at the same rate: every caBundle and both replicas on the new CA; no failed request', async () => {
      const caOf = async () => {
        const r = await kubectlAsync(['-n', NS, 'get', 'secret', 'annex-tls', '-o', 'json']);
        const s = JSON.parse(r.stdout);
        return {
          ca: s.data['ca.crt'] as string,
          phase: s.metadata.annotations?.['annex.dev/ca-phase'],
        };
      };
      const old = (await caOf()).ca;
      const phases: string[] = []; // each phase seen, in order
      await underLoad('CA rotation', async () => {
        const t0 = Date.now();
        const r = await kubectlAsync([
          '-n',
          NS,
          'annotate',
          'secret',
          'annex-tls',
          'annex.dev/rotate=now',
        ]);
        expect(r.status, r.stderr).toBe(0);
        // publishing -> switched -> stable, each after overlapSeconds (60 as shipped).
        await eventually('the rotation to end (stable, a new CA)', 300_000, async () => {
          const { ca, phase } = await caOf();
          if (phases.at(-1) !== phase) phases.push(phase);
          return phase === 'stable' && ca !== old;
        });
        log(`CA rotation: phases ${phases.join(' -> ')} in ${(Date.now() - t0) / 1000}s`);
      });
      expect(phases.slice(-3)).toEqual(['publishing', 'switched', 'stable']);
      const { ca } = await caOf();
      // Every registration annex keeps trusts the new CA alone.
      const hooks = json([
        'get',
        'validatingwebhookconfigurations,mutatingwebhookconfigurations',
        '-l',
        'app.kubernetes.io/name=annex',
      ]).items;
      const bundles = hooks.flatMap((h: { webhooks: { clientConfig: { caBundle: string } }[] }) =>
        h.webhooks.map((w) => w.clientConfig.caBundle),
      );
      bundles.push(
        ...json(['get', 'apiservices', '-l', 'app.kubernetes.io/name=annex']).items.map(
          (a: { spec: { caBundle: string } }) => a.spec.caBundle,
        ),
      );
      expect(bundles.length).toBeGreaterThanOrEqual(4);
      expect(new Set(bundles)).toEqual(new Set([ca]));
      // Both replicas serve a certificate the new CA verifies, for the Service's name.
      for (const p of pods().filter(ready)) {
        const ip = json(['-n', NS, 'get', 'pod', p.metadata.name]).status.podIP;
        const hello = node.exec(process.execPath, [
          '-e',
          `const s = require('node:tls').connect({ host: '${ip}', port: 8443, servername: 'annex.${NS}.svc', ca: Buffer.from('${ca}', 'base64') }, () => { process.stdout.write('verified'); s.end(); }); s.on('error', (e) => process.stdout.write(e.message));`,
        ]);
        expect(hello.stdout, p.metadata.name).toBe('verified');
      }
    });

    /** POST an Eviction for a Pod as kubectl drain does; the API server's status and body. */
    function evict(pod: string): Promise<{ status: number; body: string }> {
      const c = node.cluster;
      return new Promise((resolve, reject) => {
        const req = request(
          `${c.server}/api/v1/namespaces/${NS}/pods/${pod}/eviction`,
          {
            ...adminIdentity(c),
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
          },
          (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d) => (body += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          },
        );
        req.on('error', reject);
        req.end(
          JSON.stringify({
            apiVersion: 'policy/v1',
            kind: 'Eviction',
            metadata: { name: pod, namespace: NS },
          }),
        );
      });
    }
  },
);
