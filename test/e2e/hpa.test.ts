// A real HorizontalPodAutoscaler scaling Deployments on annex's metrics. This file starts
// its own control plane WITH a kube-controller-manager (deployment, replicaset and HPA
// controllers only; 1 s HPA sync, no downscale stabilization): the shared one has none, so
// the other suites stay fast and nothing reconciles their objects. The HPA controller runs
// as its own ServiceAccount, so Kubernetes' bootstrap RBAC for it is what is tested.
// Pods stay Pending (no scheduler, no kubelet): the test asserts on spec.replicas, which is
// what the HPA decides.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ControlPlane, type ClusterInfo } from '../../src/devcluster/control-plane.js';
import { waitForCondition } from '../../src/devcluster/wait.js';
import * as wire from '../../src/devcluster/wire.js';
import { KubeClient } from '../../src/kube/client.js';
import { loadKubeconfig } from '../../src/kube/kubeconfig.js';
import { annexGet, startTestAnnex, type TestAnnex } from '../cluster/annex.js';
import { HPA_CONTROLLERS } from '../cluster/control-plane.js';
import { expectRecorded } from '../docs/acceptance.js';
import { describeCluster, kubectl } from '../cluster/harness.js';
import { eventually } from '../cluster/kubelet.js';

describeCluster(
  'a HorizontalPodAutoscaler on annex metrics (own control plane with kube-controller-manager)',
  (shared) => {
    const cp = new ControlPlane(shared.binDir, shared.version);
    let c: ClusterInfo;
    let kube: KubeClient;
    let annex: TestAnnex;
    let source: Server;
    let url: string;
    const values: Record<string, string> = {
      queue: '{"depth": 10}',
      rps: '{"rps": 10}',
      bad: '{"n": 1}',
    };
    const ns = 'shop';
    const k = async (args: string[], input?: string) => {
      const r = await kubectl(args, {
        as: { kubeconfig: c.adminKubeconfig },
        ...(input ? { input } : {}),
      });
      if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    const run: wire.Kubectl = (args, input) => k(args, input);
    const replicas = async (name: string) =>
      (
        await kube.get<{ spec: { replicas: number } }>(
          `/apis/apps/v1/namespaces/${ns}/deployments/${name}`,
        )
      ).spec.replicas;
    /** Sets a source's value; resolves with the time until the Deployment has `want` replicas (100 ms steps). */
    const scaleTo = async (src: string, body: string, deploy: string, want: number) => {
      const t0 = Date.now();
      values[src] = body;
      while ((await replicas(deploy)) !== want) {
        if (Date.now() - t0 > 30_000) throw new Error(`${deploy} never reached ${want} replicas`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return Date.now() - t0;
    };
    /** `kubectl describe hpa` once the HPA has re-read its metric at the new size. */
    const describeWhen = (name: string, re: RegExp) =>
      eventually(async () => {
        const out = await k(['describe', 'hpa', name, '-n', ns]);
        return re.test(out) ? out : undefined;
      }, 20_000);
    const latencies: number[] = [];

    beforeAll(async () => {
      const t0 = Date.now();
      c = await cp.start(() => {}, {
        controllerManager: HPA_CONTROLLERS,
      });
      kube = new KubeClient(loadKubeconfig(c.adminKubeconfig));
      source = createServer((req, res) => {
        const name = req.url!.slice(1);
        if (name === 'hang') return; // never answers: a timeout
        if (name === 'prom') {
          res.setHeader('content-type', 'text/plain; version=0.0.4');
          return void res.end(
            '# TYPE http_requests_total counter\nhttp_requests_total{code="200"} 7\nhttp_requests_total{code="200",path="/a"} 5\nhttp_requests_total{code="500"} 3\n',
          );
        }
        res.setHeader('content-type', 'application/json');
        res.end(values[name] ?? '{}');
      });
      await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
      url = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
      await wire.applyObjects(run, wire.repoManifest('manifests/crds/externalmetrics.yaml'));
      await waitForCondition(run, ['crd/externalmetrics.metrics.annex.dev'], 'Established');
      annex = await startTestAnnex({
        kube: { kubeconfig: c.adminKubeconfig },
        metrics: { enabled: false },
        admission: { names: { enabled: false }, defaults: { enabled: false } } as never,
        // The admin allows the test's source by its loopback address (refused otherwise).
        scaling: { enabled: true, allow: { urls: [`${url}/`], hosts: [], cidrs: [] } },
      });
      await wire.ensureAnnexService(run);
      const apiservices = ['external-metrics-k8s-io', 'custom-metrics-k8s-io'].flatMap((g) =>
        wire.pointAtLocalAnnex(
          wire.repoManifest(`apiservice/${g}/apiservice.yaml`),
          annex.port,
          annex.caBundle,
        ),
      );
      await wire.applyObjects(run, apiservices);
      await k(['create', 'namespace', ns]);
      await k(['create', 'serviceaccount', 'default', '-n', ns]);
      const deployment = (name: string) => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace: ns },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
          },
        },
      });
      const metric = (name: string, spec: object) => ({
        apiVersion: 'metrics.annex.dev/v1alpha1',
        kind: 'ExternalMetric',
        metadata: { name, namespace: ns },
        spec: { intervalSeconds: 1, timeoutSeconds: 0.5, ...spec },
      });
      const hpa = (name: string, metricSpec: object) => ({
        apiVersion: 'autoscaling/v2',
        kind: 'HorizontalPodAutoscaler',
        metadata: { name, namespace: ns },
        spec: {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
          minReplicas: 1,
          maxReplicas: 10,
          metrics: [metricSpec],
          behavior: { scaleDown: { stabilizationWindowSeconds: 0 } },
        },
      });
      await wire.applyObjects(run, [
        deployment('worker'),
        deployment('web'),
        deployment('mailer'),
        metric('queue-depth', {
          metricName: 'queue_depth',
          metricLabels: { queue: 'jobs' },
          json: { url: `${url}/queue`, path: '$.depth' },
        }),
        metric('web-rps', {
          metricName: 'requests_per_second',
          describedObject: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web' },
          json: { url: `${url}/rps`, path: '$.rps' },
        }),
        metric('mail-queue', {
          metricName: 'mail_queue',
          json: { url: `${url}/bad`, path: '$.n' },
        }),
      ]);
      await waitForCondition(
        run,
        apiservices.map((a) => `apiservice/${a.metadata.name}`),
        'Available',
      );
      // HPAs only once annex serves their metrics: one made earlier records a first
      // FailedGet…Metric (the metric not seen by annex yet), which describe would show.
      await eventually(() =>
        k(['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue_depth`]),
      );
      await eventually(() =>
        k([
          'get',
          '--raw',
          `/apis/custom.metrics.k8s.io/v1beta2/namespaces/${ns}/ingresses.networking.k8s.io/web/requests_per_second`,
        ]),
      );
      await eventually(() =>
        k(['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/mail_queue`]),
      );
      await wire.applyObjects(run, [
        hpa('worker', {
          type: 'External',
          external: {
            metric: { name: 'queue_depth', selector: { matchLabels: { queue: 'jobs' } } },
            target: { type: 'AverageValue', averageValue: '10' },
          },
        }),
        hpa('web', {
          type: 'Object',
          object: {
            describedObject: { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', name: 'web' },
            metric: { name: 'requests_per_second' },
            target: { type: 'AverageValue', averageValue: '10' },
          },
        }),
        hpa('mailer', {
          type: 'External',
          external: {
            metric: { name: 'mail_queue' },
            target: { type: 'AverageValue', averageValue: '1' },
          },
        }),
      ]);
      console.error(`hpa e2e: set up in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    }, 80_000);

    afterAll(async () => {
      console.error(
        `hpa e2e: source change → new spec.replicas: ${latencies.map((l) => `${(l / 1000).toFixed(1)}s`).join(', ')}`,
      );
      await annex?.stop();
      source?.closeAllConnections();
      source?.close();
      kube?.close();
      await cp.stop();
    });

    it('serves an ExternalMetricValueList through the aggregator, with status on the ExternalMetric', async () => {
      const list = JSON.parse(
        await eventually(() =>
          k([
            'get',
            '--raw',
            `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue_depth?labelSelector=queue%3Djobs`,
          ]),
        ),
      );
      expect(list).toMatchObject({
        kind: 'ExternalMetricValueList',
        items: [
          { metricName: 'queue_depth', metricLabels: { queue: 'jobs' }, value: '10', window: 1 },
        ],
      });
      const em = await eventually(async () => {
        const o = JSON.parse(
          await k(['get', 'externalmetric', 'queue-depth', '-n', ns, '-o', 'json']),
        );
        return o.status?.available ? o : undefined;
      });
      expect(em.status).toMatchObject({ value: '10', available: true, observedGeneration: 1 });
    });

    it('reads Prometheus text and counts Kubernetes objects; refuses a malformed ExternalMetric and a caller without RBAC in one line', async () => {
      await wire.applyObjects(run, [
        {
          apiVersion: 'metrics.annex.dev/v1alpha1',
          kind: 'ExternalMetric',
          metadata: { name: 'ok-requests', namespace: ns },
          spec: {
            intervalSeconds: 1,
            prometheus: {
              url: `${url}/prom`,
              metric: 'http_requests_total',
              labels: { code: '200' },
            },
          },
        },
        {
          apiVersion: 'metrics.annex.dev/v1alpha1',
          kind: 'ExternalMetric',
          metadata: { name: 'deployments', namespace: ns },
          spec: { intervalSeconds: 1, objects: { apiVersion: 'apps/v1', resource: 'deployments' } },
        },
      ]);
      const value = (metric: string) =>
        eventually(async () => {
          const r = await kubectl(
            ['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/${metric}`],
            { as: { kubeconfig: c.adminKubeconfig } },
          );
          return r.code === 0 ? JSON.parse(r.stdout).items[0].value : undefined;
        });
      expect(await value('ok-requests')).toBe('12');
      expect(await value('deployments')).toBe('3');
      const bad = await kubectl(['apply', '-f', '-'], {
        as: { kubeconfig: c.adminKubeconfig },
        input: JSON.stringify({
          apiVersion: 'metrics.annex.dev/v1alpha1',
          kind: 'ExternalMetric',
          metadata: { name: 'two-sources', namespace: ns },
          spec: {
            json: { url: `${url}/queue`, path: '$.depth' },
            objects: { apiVersion: 'v1', resource: 'pods' },
          },
        }),
      });
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/exactly one source: json, prometheus or objects/);
      expect(bad.stderr.trim().split('\n')).toHaveLength(1);
      const jane = await kubectl(
        ['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/queue_depth`],
        { as: { kubeconfig: c.userKubeconfig } },
      );
      expect(jane.stderr.trim()).toBe(
        `Error from server (Forbidden): queue_depth.external.metrics.k8s.io is forbidden: User "jane" cannot list resource "queue_depth" in API group "external.metrics.k8s.io" in the namespace "${ns}"`,
      );
    });

    it('scales a Deployment on an external metric: 1 → 5 → 2, describe shows annex values and no errors', async () => {
      await eventually(async () => {
        const h = JSON.parse(await k(['get', 'hpa', 'worker', '-n', ns, '-o', 'json']));
        return h.status?.currentMetrics?.[0]?.external?.current?.averageValue === '10'
          ? true
          : undefined;
      }, 30_000);
      expect(await replicas('worker')).toBe(1);
      latencies.push(await scaleTo('queue', '{"depth": 50}', 'worker', 5));
      latencies.push(await scaleTo('queue', '{"depth": 20}', 'worker', 2));
      const describe = await describeWhen('worker', /\(target average value\):\s+10 \/ 10/);
      const get = await k(['get', 'hpa', 'worker', '-n', ns]);
      console.error(
        `--- kubectl get hpa worker\n${get}--- kubectl describe hpa worker\n${describe}`,
      );
      expect(describe).toMatch(/"queue_depth" \(target average value\):\s+10 \/ 10/);
      expect(describe).toMatch(/ScalingActive\s+True\s+ValidMetricFound/);
      expect(describe).not.toMatch(/FailedGet|FailedCompute/);
    });

    it('scales a Deployment on an object metric from custom.metrics.k8s.io: 1 → 5 → 2', async () => {
      await eventually(async () => {
        const h = JSON.parse(await k(['get', 'hpa', 'web', '-n', ns, '-o', 'json']));
        return h.status?.currentMetrics?.[0]?.object?.current?.averageValue ? true : undefined;
      }, 30_000);
      expect(await replicas('web')).toBe(1);
      latencies.push(await scaleTo('rps', '{"rps": 50}', 'web', 5));
      latencies.push(await scaleTo('rps', '{"rps": 20}', 'web', 2));
      const describe = await describeWhen('web', /\(target average value\):\s+10 \/ 10/);
      expectRecorded('docs/tour.md', 'test/e2e/hpa.test.ts', 'kubectl describe hpa web', describe);
      console.error(`--- kubectl describe hpa web\n${describe}`);
      expect(describe).toMatch(
        /"requests_per_second" on Ingress\/web \(target average value\):\s+10 \/ 10/,
      );
      expect(describe).not.toMatch(/FailedGet|FailedCompute/);
    });

    it('a source returning garbage or timing out: metric unavailable, the HPA does not scale, others unaffected, failures counted', async () => {
      values.bad = '<html>oops</html>';
      const hpa = await eventually(async () => {
        const h = JSON.parse(await k(['get', 'hpa', 'mailer', '-n', ns, '-o', 'json']));
        const active = (h.status?.conditions ?? []).find((x: any) => x.type === 'ScalingActive');
        return active?.reason === 'FailedGetExternalMetric' ? h : undefined;
      }, 30_000);
      const active = hpa.status.conditions.find((x: any) => x.type === 'ScalingActive');
      expect(active.message).toMatch(
        /metric mail_queue is unavailable \(ExternalMetric shop\/mail-queue\): the body is not JSON \(at byte 0\)$/,
      );
      const describe = await k(['describe', 'hpa', 'mailer', '-n', ns]);
      expectRecorded(
        'docs/tour.md',
        'test/e2e/hpa.test.ts',
        'kubectl describe hpa mailer',
        describe,
      );
      expect(describe).toMatch(/FailedGetExternalMetric/);
      expect(await replicas('mailer')).toBe(1);
      // The others still scale.
      latencies.push(await scaleTo('queue', '{"depth": 30}', 'worker', 3));
      // A source that never answers: unavailable within its timeout, with the reason.
      await k([
        'patch',
        'externalmetric',
        'mail-queue',
        '-n',
        ns,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { json: { url: `${url}/hang`, path: '$.n' } } }),
      ]);
      const raw = await eventually(async () => {
        const r = await kubectl(
          ['get', '--raw', `/apis/external.metrics.k8s.io/v1beta1/namespaces/${ns}/mail_queue`],
          {
            as: { kubeconfig: c.adminKubeconfig },
          },
        );
        return /no answer within 0.5s/.test(r.stderr) ? r.stderr : undefined;
      }, 20_000);
      expect(raw.trim().split('\n')).toHaveLength(1);
      expect(await replicas('mailer')).toBe(1);
      const em = JSON.parse(
        await k(['get', 'externalmetric', 'mail-queue', '-n', ns, '-o', 'json']),
      );
      expect(em.status).toMatchObject({
        available: false,
        lastError: expect.stringMatching(/no answer within 0.5s$/),
      });
      const metrics = await annexGet(annex, '/metrics', [
        join(c.dir, 'admin.crt'),
        join(c.dir, 'admin.key'),
      ]);
      expect(metrics.status).toBe(200);
      expect(metrics.body).toMatch(
        /annex_metric_source_failures_total\{namespace="shop",name="mail-queue",source="json",reason="parse"\} [1-9]/,
      );
      expect(metrics.body).toMatch(
        /annex_metric_source_failures_total\{namespace="shop",name="mail-queue",source="json",reason="timeout"\} [1-9]/,
      );
      expect(metrics.body).not.toMatch(/failures_total\{namespace="shop",name="queue-depth"/);
    });
  },
);
