// `kubectl top` and an HPA on CPU utilisation, on the real node (issue 22 items 3 and 4):
// annex serves metrics.k8s.io from the real kubelet's /metrics/resource, and the real
// kube-controller-manager's HPA controller scales a real Deployment whose Pods burn CPU.
// metrics.k8s.io is opt-in as shipped (docs/install.md), so this test does what a user of
// a checkout does to switch it on: `metrics.registerMetricsK8sIo: true` in
// manifests/config.yaml, `annex manifests --all --write .` (what `npm run manifests`
// runs: the placeholders and annex:registration's names), `annex install --image`.
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { parse } from 'yaml';
import { NODE_NAME, startNode, type Node } from '../cluster/node.js';
import { helloPodSpec, kube } from './kube.js';

const ROOT = join(import.meta.dirname, '..', '..');
const NS = 'annex-system';
const why = inject('nodeSkipReason');

/** A copy of the checkout's dist/ and manifests/ with config.yaml edited as a user would
 * (each edit must apply). */
function userCheckout(edits: [RegExp, string][]): string {
  const dir = mkdtempSync(join(tmpdir(), 'annex-checkout-'));
  for (const f of ['dist', 'manifests', 'package.json'])
    cpSync(join(ROOT, f), join(dir, f), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  const file = join(dir, 'manifests', 'config.yaml');
  let text = readFileSync(file, 'utf8');
  for (const [re, to] of edits) {
    expect(text, `manifests/config.yaml has ${re}`).toMatch(re);
    text = text.replace(re, to);
  }
  writeFileSync(file, text);
  return dir;
}

/** The hello image as a Deployment: `burn` answers /burn, `load` (LOAD_URL) calls it. */
function helloDeployment(name: string, env: Record<string, string> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'shop' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: helloPodSpec(name, {
          env: Object.entries(env).map(([k, value]) => ({ name: k, value })),
          // Utilisation is usage over this request.
          resources: { requests: { cpu: '100m', memory: '16Mi' } },
        }),
      },
    },
  };
}

/** An HPA on one metric for the Deployment `name`, 1 to 3 replicas. */
function scaler(name: string, metric: object) {
  return {
    apiVersion: 'autoscaling/v2',
    kind: 'HorizontalPodAutoscaler',
    metadata: { name, namespace: 'shop' },
    spec: {
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
      minReplicas: 1,
      maxReplicas: 3,
      metrics: [metric],
      // The default scale-down stabilisation is 300 s: none here, so the test sees it.
      behavior: { scaleDown: { stabilizationWindowSeconds: 0 } },
    },
  };
}

(why ? describe.skip : describe)(
  `kubectl top and an HPA on CPU on a real node${why ? ` (skipped: ${why})` : ''}`,
  () => {
    let node: Node;
    let checkout = '';
    const log = (l: string) => console.error(`scaling: ${l}`);
    const { kubectl, ok, json, annex, install, eventually } = kube(
      () => node,
      () => checkout,
    );
    beforeAll(async () => {
      // What the user adds under `metrics:` (the shipped file leaves it at its default) and
      // changes under `scaling:` — the external metrics API, and the one host it may read.
      checkout = userCheckout([
        [/^metrics:\n/m, '$&  registerMetricsK8sIo: true\n'],
        [/^( {2}registerMetricsApis:) false$/m, '$1 true'],
        [/^( {4}hosts:) \[\]/m, '$1 [queue.shop]'],
      ]);
      const config = parse(readFileSync(join(checkout, 'manifests', 'config.yaml'), 'utf8'));
      expect(config.metrics.registerMetricsK8sIo).toBe(true);
      expect(config.scaling.registerMetricsApis).toBe(true);
      expect(config.scaling.allow.hosts).toEqual(['queue.shop']);
      const written = annex(['manifests', '--all', '--write', checkout]);
      expect(written.status, written.stderr).toBe(0);
      expect(readFileSync(join(checkout, 'manifests', 'registrations.yaml'), 'utf8')).toContain(
        'v1beta1.metrics.k8s.io',
      );
      expect(readFileSync(join(checkout, 'manifests', 'registrations.yaml'), 'utf8')).toContain(
        'v1beta1.external.metrics.k8s.io',
      );
      node = await startNode((l) => console.error(`node: ${l}`), { images: [inject('nodeImage')] });
    });
    afterAll(async () => {
      if (checkout) rmSync(checkout, { recursive: true, force: true });
      if (!node) return;
      await node.stop();
      expect(node.leftovers()).toEqual([]);
    });
    /** The HPA controller's events about the HPA `name`. */
    const hpaEvents = (name: string) =>
      ok([
        'get',
        'events',
        '-n',
        'shop',
        '--field-selector',
        `involvedObject.name=${name},involvedObject.kind=HorizontalPodAutoscaler`,
      ]);

    it('`kubectl top node` and `top pod` show the real kubelet’s figures, CPU% and MEMORY% filled', async () => {
      const installed = install();
      expect(installed.status, installed.stderr).toBe(0);
      await eventually('v1beta1.metrics.k8s.io Available', 120_000, () =>
        json(['get', 'apiservice', 'v1beta1.metrics.k8s.io']).status.conditions?.some(
          (c: { type: string; status: string }) => c.type === 'Available' && c.status === 'True',
        ),
      );
      let top = '';
      const t0 = Date.now();
      await eventually('kubectl top node with figures', 90_000, () => {
        const r = kubectl(['top', 'node']);
        top = r.stdout + r.stderr;
        return r.status === 0 && r.stdout.includes(NODE_NAME);
      });
      log(`kubectl top node (${(Date.now() - t0) / 1000}s):\n${top.trim()}`);
      const [head, row] = top.trim().split('\n');
      expect(head).toMatch(/^NAME\s+CPU\(cores\)\s+CPU\(%\)\s+MEMORY\(bytes\)\s+MEMORY\(%\)\s*$/);
      expect(row).toMatch(
        new RegExp(`^${NODE_NAME}\\s+[1-9]\\d*m\\s+\\d+%\\s+[1-9]\\d*Mi\\s+\\d+%\\s*$`),
      );
      await eventually('both replicas in kubectl top pod', 60_000, () => {
        const r = kubectl(['top', 'pod', '-n', NS, '--containers', '--no-headers']);
        top = r.stdout + r.stderr;
        return r.status === 0 && r.stdout.trim().split('\n').length === 2;
      });
      log(`kubectl top pod -n ${NS} --containers:\n${top.trim()}`);
      for (const r of top.trim().split('\n'))
        expect(r).toMatch(/^annex-\S+\s+annex\s+\d+m\s+[1-9]\d*Mi\s*$/);
    });

    it('an HPA on CPU utilisation scales a Deployment whose Pods burn CPU 1 → 3 → 1', async () => {
      ok(['create', 'namespace', 'shop']);
      await eventually(
        'the default ServiceAccount of shop',
        30_000,
        () => kubectl(['get', 'sa', 'default', '-n', 'shop']).status === 0,
      );
      ok(['apply', '-f', '-'], JSON.stringify(helloDeployment('burn')));
      ok(['create', 'service', 'clusterip', 'burn', '-n', 'shop', '--tcp=8080:8080']);
      ok(['rollout', 'status', '-n', 'shop', 'deployment/burn', '--timeout=60s']);
      const hpa = scaler('burn', {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 50 } },
      });
      ok(['apply', '-f', '-'], JSON.stringify(hpa));
      const state = () => {
        const h = json(['get', 'hpa', '-n', 'shop', 'burn']);
        return {
          replicas: h.status.currentReplicas as number,
          desired: h.status.desiredReplicas as number,
          utilisation: h.status.currentMetrics?.[0]?.resource?.current?.averageUtilization as
            number | undefined,
          conditions: (h.status.conditions ?? []) as {
            type: string;
            status: string;
            reason: string;
          }[],
        };
      };
      // Idle: the HPA reads a utilisation (the metric is valid) and stays at 1.
      await eventually(
        'the HPA to read a CPU utilisation',
        120_000,
        () => state().utilisation !== undefined,
      );
      let s = state();
      log(`idle: ${JSON.stringify(s)}`);
      expect(s.conditions).toContainEqual(
        expect.objectContaining({
          type: 'ScalingActive',
          status: 'True',
          reason: 'ValidMetricFound',
        }),
      );
      expect(s.replicas).toBe(1);

      // Load: 4 requests/s of 75 ms of CPU each, about 300m on a 100m request.
      const t1 = Date.now();
      ok(
        ['apply', '-f', '-'],
        JSON.stringify(
          helloDeployment('load', {
            LOAD_URL: 'http://burn.shop:8080/burn?ms=75',
            LOAD_EVERY_MS: '250',
          }),
        ),
      );
      await eventually('3 replicas of burn', 240_000, () => state().replicas === 3);
      const up = (Date.now() - t1) / 1000;
      s = state();
      log(`scaled up in ${up}s: ${JSON.stringify(s)}`);
      log(ok(['get', 'hpa', '-n', 'shop']).trim());
      ok(['rollout', 'status', '-n', 'shop', 'deployment/burn', '--timeout=120s']);

      // No load: back to 1.
      const t2 = Date.now();
      ok(['delete', '-n', 'shop', 'deployment/load', '--wait=true', '--timeout=60s']);
      await eventually('1 replica of burn', 240_000, () => state().replicas === 1);
      const down = (Date.now() - t2) / 1000;
      s = state();
      log(`scaled down in ${down}s: ${JSON.stringify(s)}`);
      const events = hpaEvents('burn');
      log(`events:\n${events.trim()}`);
      expect(events).toMatch(
        /SuccessfulRescale.*New size: 3; reason: cpu resource utilization \(percentage of request\) above target/,
      );
      expect(events).toMatch(/SuccessfulRescale.*New size: 1; reason: All metrics below target/);
    }, 600_000);

    it('an HPA on an ExternalMetric (a JSON endpoint read at `http://queue.shop:8080`) scales 1 → 3 → 1', async () => {
      ok(['apply', '-f', '-'], JSON.stringify(helloDeployment('queue')));
      ok(['create', 'service', 'clusterip', 'queue', '-n', 'shop', '--tcp=8080:8080']);
      ok(['apply', '-f', '-'], JSON.stringify({ ...helloDeployment('worker') }));
      ok(['rollout', 'status', '-n', 'shop', 'deployment/queue', '--timeout=60s']);
      const metric = {
        apiVersion: 'metrics.annex.dev/v1alpha1',
        kind: 'ExternalMetric',
        metadata: { name: 'queue-depth', namespace: 'shop' },
        spec: {
          json: { url: 'http://queue.shop:8080/queue', path: '$.queue.depth' },
          intervalSeconds: 5,
        },
      };
      ok(['apply', '-f', '-'], JSON.stringify(metric));
      const hpa = scaler('worker', {
        type: 'External',
        external: {
          metric: { name: 'queue-depth' },
          target: { type: 'AverageValue', averageValue: '2' },
        },
      });
      ok(['apply', '-f', '-'], JSON.stringify(hpa));
      /** POST /queue?depth=n through the API server's service proxy. */
      const setDepth = (n: number) =>
        ok(
          [
            'create',
            '--raw',
            `/api/v1/namespaces/shop/services/queue:8080/proxy/queue?depth=${n}`,
            '-f',
            '-',
          ],
          '',
        );
      const replicas = () => json(['get', 'hpa', '-n', 'shop', 'worker']).status.currentReplicas;
      await eventually(
        'the ExternalMetric read (status.value 0)',
        60_000,
        () => json(['get', 'externalmetric', '-n', 'shop', 'queue-depth']).status?.value === '0',
      );
      const t1 = Date.now();
      expect(setDepth(6)).toContain('"depth":6');
      await eventually('3 replicas of worker', 180_000, () => replicas() === 3);
      const up = (Date.now() - t1) / 1000;
      log(`external: scaled up in ${up}s`);
      log(ok(['get', 'externalmetric,hpa', '-n', 'shop']).trim());
      const t2 = Date.now();
      setDepth(0);
      await eventually('1 replica of worker', 180_000, () => replicas() === 1);
      log(`external: scaled down in ${(Date.now() - t2) / 1000}s`);
      const raw = JSON.parse(
        ok(['get', '--raw', '/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue-depth']),
      );
      expect(raw.kind).toBe('ExternalMetricValueList');
      expect(raw.items[0].value).toBe('0');
      const events = hpaEvents('worker');
      log(`events:\n${events.trim()}`);
      expect(events).toMatch(
        /New size: 3; reason: external metric queue-depth\(nil\) above target/,
      );
      expect(events).toMatch(/New size: 1; reason: All metrics below target/);
    }, 600_000);
  },
);
