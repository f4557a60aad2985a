// Custom resources get no built-in defaulting: annex's mutating webhook gives the pod
// templates inside them the API server's own pod-template defaults.
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  applyObjects,
  deleteObjects,
  ensureAnnexService,
  pointAtTestAnnex,
  repoManifest,
  startTestAnnex,
  type TestAnnex,
} from '../cluster/annex.js';
import {
  createNamespace,
  describeCluster,
  kubectl,
  kubectlOk,
  waitForCondition,
} from '../cluster/harness.js';

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'workers.demo.annex.dev' },
  spec: {
    group: 'demo.annex.dev',
    scope: 'Namespaced',
    names: { plural: 'workers', singular: 'worker', kind: 'Worker' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                properties: {
                  replicas: { type: 'integer' },
                  template: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                },
              },
            },
          },
        },
      },
    ],
  },
};

describeCluster('defaults for pod templates in custom resources', () => {
  let annex: TestAnnex;
  let ns: string;
  let configs: any[];

  beforeAll(async () => {
    await applyObjects([crd]);
    await waitForCondition(['crd/workers.demo.annex.dev'], 'Established');
    annex = await startTestAnnex();
    await ensureAnnexService();
    configs = pointAtTestAnnex(
      repoManifest('webhooks/mutating-defaults.yaml'),
      annex.port,
      annex.caBundle,
    );
    await applyObjects(configs);
    ns = await createNamespace('crd');
  });

  afterAll(async () => {
    if (configs) await deleteObjects(configs);
    await annex?.stop();
  });

  it('gives an opted-in Worker the pod-template defaults a Deployment would get', async () => {
    const worker = (name: string, labels: Record<string, string>) => ({
      apiVersion: 'demo.annex.dev/v1',
      kind: 'Worker',
      metadata: { name, namespace: ns, labels },
      spec: {
        replicas: 1,
        template: {
          metadata: { labels: { app: name } },
          spec: { containers: [{ name: 'w', image: 'nginx:1.27' }] },
        },
      },
    });
    // The API server loads new webhook configurations asynchronously: retry until it calls annex.
    let spec: any;
    for (let i = 0; i < 40; i++) {
      await kubectl(['-n', ns, 'delete', 'worker', 'w1', '--ignore-not-found']);
      await applyObjects([worker('w1', { 'annex.dev/pod-defaults': 'enabled' })]);
      spec = JSON.parse(await kubectlOk(['-n', ns, 'get', 'worker', 'w1', '-o', 'json'])).spec
        .template.spec;
      if (spec.restartPolicy) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(spec).toMatchObject({
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      securityContext: {},
    });
    expect(spec.containers[0]).toMatchObject({
      image: 'nginx:1.27',
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
      resources: { requests: { cpu: '100m', memory: '128Mi' } },
    });

    // Without the opt-in label the custom resource is left as written.
    await applyObjects([worker('w2', {})]);
    const plain = JSON.parse(await kubectlOk(['-n', ns, 'get', 'worker', 'w2', '-o', 'json'])).spec
      .template.spec;
    expect(plain).toEqual({ containers: [{ name: 'w', image: 'nginx:1.27' }] });
  });

  it('answers a Worker nested 6,000 levels deep by its failurePolicy, saying why (it was a silent 500)', async () => {
    // The API server accepts up to 10,000 levels (Go's encoding/json); annex evaluates
    // up to 1,000 and says so. This registration is failurePolicy Ignore, so the object is
    // let through undefaulted, with a warning, as the API server treats a failing webhook.
    // Written as text: JSON.stringify gives up near 5,000.
    const worker = JSON.stringify({
      apiVersion: 'demo.annex.dev/v1',
      kind: 'Worker',
      metadata: { name: 'deep', namespace: ns, labels: { 'annex.dev/pod-defaults': 'enabled' } },
      spec: { template: { spec: { containers: [{ name: 'w', image: 'nginx:1.27' }] }, x: '@@' } },
    }).replace('"@@"', '{"a":'.repeat(6000) + '"SECRET-deep"' + '}'.repeat(6000));
    const r = await kubectl(['create', '--dry-run=server', '-f', '-'], { input: worker });
    expect(r.code).toBe(0);
    expect(r.stderr).toContain(
      'Warning: annex webhook "custom-resource-defaults.annex.dev" cannot evaluate request.object: it is nested more than 1000 levels deep; allowed (failurePolicy Ignore)',
    );
    expect(r.stderr).not.toContain('SECRET-deep');
  });
});
