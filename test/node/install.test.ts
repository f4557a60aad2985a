// annex's real image, installed as shipped, on the real node (issue 22 item 3, first step):
// scripts/image.sh builds the image (podman, offline) and saves it as a docker-archive, the
// node imports it into containerd, and `annex install --image` (docs/install.md, step 4)
// applies the kustomize base with nothing changed but the image. From there everything is
// real: the Deployment and ReplicaSet controllers, kube-scheduler, the kubelet with the
// Pods' ServiceAccount tokens and their probes, kube-proxy for the Service the API server
// calls (APIServices, webhooks). Part of `npm test` (the `node` project); alone:
// `npm run test:node`. The image archive comes from ./global-setup.ts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { NODE_NAME, startNode, type Node } from '../cluster/node.js';
import { IMAGE, kube } from './kube.js';

const ROOT = join(import.meta.dirname, '..', '..');
const NS = 'annex-system'; // as shipped

const why = inject('nodeSkipReason');

(why ? describe.skip : describe)(
  `annex's image as the shipped Deployment on a real node${why ? ` (skipped: ${why})` : ''}`,
  () => {
    let node: Node;
    const times: Record<string, number> = {};
    const log = (l: string) => console.error(`install: ${l}`);
    const { kubectl, ok, json, annex, install, eventually } = kube(() => node);
    /** Every object of every listable kind labelled as annex's, as kind/name lines. */
    const annexLabelled = () => {
      const kinds = ok(['api-resources', '--verbs=list', '-o', 'name']).trim().split('\n');
      const r = kubectl(['get', kinds.join(','), '-A', '-l', 'app.kubernetes.io/name=annex']);
      return r.stdout.trim().split('\n').filter(Boolean);
    };
    beforeAll(async () => {
      const archive = inject('nodeImage');
      expect(archive).toMatch(/\.tar$/);
      const t0 = Date.now();
      node = await startNode((l) => console.error(`node: ${l}`), { images: [archive] });
      times['node started (with the import)'] = (Date.now() - t0) / 1000;
    });
    afterAll(async () => {
      log(`phases: ${JSON.stringify({ ...times, ...(node ? { node: node.timings } : {}) })}`);
      if (!node) return;
      await node.stop();
      expect(node.leftovers()).toEqual([]);
    });

    it('the image is in containerd, as the tag the install names', () => {
      const r = node.crictl(['images', '-o', 'json']);
      expect(r.code).toBe(0);
      const tags = JSON.parse(r.stdout).images.flatMap((i: { repoTags: string[] }) => i.repoTags);
      expect(tags).toContain(IMAGE);
    });

    it('`annex install --image` runs the shipped Deployment: 2 Pods Ready by their probes, APIServices Available, the names webhook refuses', async () => {
      const t0 = Date.now();
      const installed = install();
      times['annex install (until registered)'] = (Date.now() - t0) / 1000;
      log(
        `annex install: exit ${installed.status} in ${times['annex install (until registered)']}s`,
      );
      if (installed.status !== 0) {
        for (const p of json(['-n', NS, 'get', 'pods']).items) {
          log(`pod ${p.metadata.name}: ${JSON.stringify(p.status.containerStatuses)}`);
          for (const prev of [[], ['--previous']])
            log(
              `logs ${prev.join('')}: ${kubectl(['-n', NS, 'logs', p.metadata.name, '--tail=40', ...prev]).stdout}`,
            );
        }
      }
      expect(installed.stderr).toBe('');
      expect(installed.status).toBe(0);
      expect(installed.stdout).toContain('registered by annex:');

      // The real controllers: Deployment -> ReplicaSet -> 2 Pods, on this node, Ready.
      await eventually('2 available replicas', 120_000, () => {
        const d = json(['-n', NS, 'get', 'deployment', 'annex']);
        return d.status.availableReplicas === 2 && d.status.updatedReplicas === 2;
      });
      times['Deployment available (from install)'] = (Date.now() - t0) / 1000;
      const rs = json(['-n', NS, 'get', 'replicasets']).items;
      expect(rs).toHaveLength(1);
      expect(rs[0].metadata.ownerReferences[0]).toMatchObject({
        kind: 'Deployment',
        name: 'annex',
      });
      const pods = json(['-n', NS, 'get', 'pods']).items;
      expect(pods).toHaveLength(2);
      for (const p of pods) {
        expect(p.metadata.ownerReferences[0]).toMatchObject({
          kind: 'ReplicaSet',
          name: rs[0].metadata.name,
        });
        expect(p.spec.nodeName).toBe(NODE_NAME);
        expect(p.spec.containers[0].image).toBe(IMAGE);
        // The readiness probe (HTTPS /readyz) made them Ready; nothing was restarted.
        expect(p.status.conditions).toContainEqual(
          expect.objectContaining({ type: 'Ready', status: 'True' }),
        );
        expect(p.status.containerStatuses[0].restartCount).toBe(0);
        // A real ServiceAccount token (kube-api-access-*, TokenRequest) is mounted.
        expect(p.spec.volumes.map((v: { name: string }) => v.name)).toContainEqual(
          expect.stringMatching(/^kube-api-access-/),
        );
      }
      // The Service has both Pods as endpoints (kube-proxy routes the API server to them).
      const slices = json([
        '-n',
        NS,
        'get',
        'endpointslices',
        '-l',
        'kubernetes.io/service-name=annex',
      ]).items;
      const ready = slices
        .flatMap((s: { endpoints?: unknown[] }) => s.endpoints ?? [])
        .filter((e: { conditions: { ready: boolean } }) => e.conditions.ready);
      expect(ready).toHaveLength(2);

      // The aggregator reaches annex through the Service: every annex APIService Available.
      const apiservices = json(['get', 'apiservices', '-l', 'app.kubernetes.io/name=annex']).items;
      expect(apiservices.length).toBeGreaterThanOrEqual(2);
      await eventually('annex APIServices Available', 60_000, () =>
        json(['get', 'apiservices', '-l', 'app.kubernetes.io/name=annex']).items.every(
          (a: { status: { conditions?: { type: string; status: string }[] } }) =>
            a.status.conditions?.some((c) => c.type === 'Available' && c.status === 'True'),
        ),
      );
      times['APIServices Available (from install)'] = (Date.now() - t0) / 1000;
      for (const a of apiservices) log(`apiservice ${a.metadata.name} Available`);
      const nodes = JSON.parse(ok(['get', '--raw', '/apis/metrics.annex.dev/v1beta1/nodes']));
      expect(nodes.kind).toBe('NodeMetricsList');

      // The names webhook, called by the API server through the Service, refuses.
      ok(['create', 'namespace', 'annex-it-user']);
      let refusal = '';
      await eventually('the names webhook to deny web.front', 30_000, () => {
        const r = kubectl([
          '-n',
          'annex-it-user',
          'create',
          'deployment',
          'web.front',
          '--image=nginx:1.27',
        ]);
        refusal = r.stderr;
        return r.stderr.includes('admission webhook "names.annex.dev" denied the request');
      });
      expect(refusal).toContain('must not contain dots');
      log(`refused: ${refusal.split('\n').find((l) => l.includes('names.annex.dev'))}`);
    });

    it("with the API server's admission client CA in the ConfigMap annex mounts, the API server's reviews are recorded as policy decisions", async () => {
      // Why the ConfigMap is absent after `annex install`: the kustomize base cannot know
      // which CA signs the kube-apiserver's admission client certificate (minikube's is set
      // up by hand: `annex certs admission-client`, docs/install.md). The Pods mount it as
      // optional, and without it annex answers every review but records none: it cannot
      // tell the API server from a Pod posting a forged review. This control plane's
      // kube-apiserver already presents one (its AdmissionConfiguration), so its CA is what
      // the ConfigMap holds; the kubelet adds the file to the running Pods at its next sync.
      ok(['apply', '-f', join(ROOT, 'policies', 'host-network.yaml')]);
      ok([
        '-n',
        NS,
        'create',
        'configmap',
        'annex-admission-client-ca',
        `--from-file=ca.crt=${node.cluster.webhookClientCaFile}`,
      ]);
      const t0 = Date.now();
      const hostNetwork = (name: string) =>
        JSON.stringify({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name },
          spec: {
            replicas: 0, // a review is all this needs: no Pod to run
            selector: { matchLabels: { app: name } },
            template: {
              metadata: { labels: { app: name } },
              spec: { hostNetwork: true, containers: [{ name: 'c', image: 'nginx:1.27' }] },
            },
          },
        });
      let n = 0;
      let recorded: { metadata: { name: string } }[] = [];
      // The kubelet's ConfigMap sync (about a minute), then annex's 2 s re-read.
      /** Each replica's admission-callers line of /readyz?verbose (through the pod proxy). */
      const callers = () =>
        json(['-n', NS, 'get', 'pods']).items.map((p: { metadata: { name: string } }) => {
          const r = kubectl([
            'get',
            '--raw',
            `/api/v1/namespaces/${NS}/pods/https:${p.metadata.name}:8443/proxy/readyz?verbose`,
          ]);
          const line = `${r.stdout}${r.stderr}`.split('\n').find((l) => l.includes('callers'));
          return `${p.metadata.name}: ${line ?? r.stderr.trim()}`;
        });
      log(`before: ${callers().join(' | ')}`);
      try {
        await eventually('a recorded host-network decision', 90_000, () => {
          const name = `hostnet-${n++}`;
          ok(['-n', 'annex-it-user', 'create', '-f', '-'], hostNetwork(name));
          const events = json(['-n', 'annex-it-user', 'get', 'admissionevents']).items;
          recorded = events.filter((e: unknown) => JSON.stringify(e).includes('host-network'));
          return recorded.length > 0;
        });
      } finally {
        log(`after ${(Date.now() - t0) / 1000}s: ${callers().join(' | ')}`);
        const policy = json(['get', 'admissionpolicies', 'host-network']);
        log(`host-network status: ${JSON.stringify(policy.status)}`);
        const listed = kubectl(['get', 'admissionevents', '-A']);
        log(`admissionevents: ${(listed.stdout + listed.stderr).slice(0, 600)}`);
        for (const p of json(['-n', NS, 'get', 'pods']).items) {
          const lines = kubectl(['-n', NS, 'logs', p.metadata.name]).stdout.split('\n');
          const about = lines.filter((l) => /decision|peer|host-network|audit/i.test(l));
          log(`${p.metadata.name} log: ${about.slice(-6).join(' || ').slice(0, 1500)}`);
        }
      }
      log(
        `first decision recorded ${(Date.now() - t0) / 1000}s after the ConfigMap (${n} Deployments created)`,
      );
      expect(ok(['-n', 'annex-it-user', 'get', 'admissionevents'])).toMatch(
        /Audit\s+host-network\s+no-host-network\s+Deployment\s+hostnet-\d+/,
      );
      ok(['delete', '-f', join(ROOT, 'policies', 'host-network.yaml')]);
    }, 180_000);

    it("NodeMetrics and PodMetrics are the real kubelet's /metrics/resource, scraped at the node's address as the shipped config says", async () => {
      const t0 = Date.now();
      let pods = '';
      // Two scrapes (15 s apart, as shipped) before a CPU rate exists.
      await eventually('both replicas in kubectl get podmetrics', 90_000, () => {
        const r = kubectl(['get', 'podmetrics.metrics.annex.dev', '-n', NS]);
        pods = r.stdout + r.stderr;
        return r.status === 0 && r.stdout.trim().split('\n').length === 3;
      });
      const nodes = ok(['get', 'nodemetrics.metrics.annex.dev']);
      log(`after ${(Date.now() - t0) / 1000}s:\n${nodes.trim()}\n${pods.trim()}`);
      expect(nodes).toMatch(new RegExp(`^${NODE_NAME}\\s+[1-9]\\d*m\\s+[1-9]\\d*Mi\\s+\\d`, 'm'));
      for (const row of pods.trim().split('\n').slice(1))
        expect(row).toMatch(/^annex-\S+\s+\d+m\s+[1-9]\d*Mi\s+\d/);

      // The same figures, read from the kubelet itself (the API server's node proxy):
      // memory is a gauge, so annex's last sample and this later one stay close.
      const text = ok(['get', '--raw', `/api/v1/nodes/${NODE_NAME}/proxy/metrics/resource`]);
      const kubelet = (name: string, pod?: string) => {
        const labels = pod ? `\\{[^}]*pod="${pod}"[^}]*\\}` : '';
        const m = new RegExp(`^${name}${labels} (\\S+)`, 'm').exec(text);
        expect(m, `${name} ${pod ?? ''} in the kubelet's /metrics/resource`).not.toBeNull();
        return Number(m![1]);
      };
      const bytes = (q: string) => Number(q.replace(/Ki$/, '')) * (q.endsWith('Ki') ? 1024 : 1);
      const node = JSON.parse(
        ok(['get', '--raw', `/apis/metrics.annex.dev/v1beta1/nodes/${NODE_NAME}`]),
      );
      const nodeWs = kubelet('node_memory_working_set_bytes');
      log(`node memory: annex ${node.usage.memory}, kubelet ${nodeWs}`);
      // The node's working set moves with whatever else this machine runs: within 2x.
      expect(bytes(node.usage.memory) / nodeWs).toBeGreaterThan(0.5);
      expect(bytes(node.usage.memory) / nodeWs).toBeLessThan(2);
      const list = JSON.parse(
        ok(['get', '--raw', `/apis/metrics.annex.dev/v1beta1/namespaces/${NS}/pods`]),
      );
      expect(list.items).toHaveLength(2);
      for (const pm of list.items) {
        const ws = kubelet('pod_memory_working_set_bytes', pm.metadata.name);
        const mem = bytes(pm.containers[0].usage.memory);
        log(`${pm.metadata.name} memory: annex ${pm.containers[0].usage.memory}, kubelet ${ws}`);
        expect(pm.containers.map((c: { name: string }) => c.name)).toEqual(['annex']);
        expect(Math.abs(mem - ws) / ws).toBeLessThan(0.25);
      }
      // metrics.k8s.io is opt-in as shipped (metrics-server may own it: docs/install.md),
      // so `kubectl top` says what it says on a cluster without a metrics server.
      const top = kubectl(['top', 'node']);
      expect(top.status).not.toBe(0);
      expect(top.stderr).toContain('Metrics API not available');
    }, 180_000);

    it('`annex uninstall` leaves nothing: the Pods stop, the namespace goes', async () => {
      const t0 = Date.now();
      const un = annex(['uninstall', '--kubeconfig', node.cluster.adminKubeconfig, '--wait', '60']);
      log(`annex uninstall: exit ${un.status} in ${(Date.now() - t0) / 1000}s`);
      expect(un.status).toBe(0);
      expect(un.stdout).toContain(`deleted namespace/${NS}`);
      // The garbage collector and the namespace controller finish what uninstall started.
      await eventually(
        `namespace ${NS} to go`,
        120_000,
        () => kubectl(['get', 'ns', NS]).status !== 0,
      );
      times['uninstall (until the namespace is gone)'] = (Date.now() - t0) / 1000;
      expect(annexLabelled()).toEqual([]);
      expect(ok(['get', 'apiservices', '-o', 'name'])).not.toMatch(/annex/);
      expect(
        ok(['get', 'validatingwebhookconfigurations,mutatingwebhookconfigurations', '-o', 'name']),
      ).toBe('');
      // No container left on the node (the sandboxes of the two Pods included).
      await eventually('no annex container on the node', 60_000, () => {
        const r = node.crictl(['pods', '--namespace', NS, '-q']);
        return r.code === 0 && r.stdout.trim() === '';
      });
    });
  },
);
