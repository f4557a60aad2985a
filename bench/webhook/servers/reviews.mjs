// AdmissionReviews for the reference-server check and the quick CPU loop: an apps/v1
// Deployment CREATE padded to about `kb` KB with env vars in its first container.
import { randomUUID } from 'node:crypto';

export function deployment({ name = 'bench-app', labels = { app: 'bench' }, kb = 10 } = {}) {
  const object = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', ...(labels ? { labels } : {}) },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'bench' } },
      template: {
        metadata: { labels: { app: 'bench' } },
        spec: {
          containers: [
            { name: 'app', image: 'registry.example/app:1.0', env: [] },
            {
              name: 'sidecar',
              image: 'registry.example/sidecar:1.0',
              resources: { requests: { cpu: '50m', memory: '64Mi' }, limits: { memory: '64Mi' } },
            },
            {
              name: 'limits-only',
              image: 'registry.example/tool:1.0',
              resources: { limits: { cpu: '1' } },
            },
          ],
        },
      },
    },
  };
  const env = object.spec.template.spec.containers[0].env;
  for (let i = 0; JSON.stringify(object).length < kb * 1024 - 300; i++) {
    env.push({ name: `BENCH_PADDING_${i}`, value: `value-${i}-${'x'.repeat(40)}` });
  }
  return object;
}

export function review(object) {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      requestKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      requestResource: { group: 'apps', version: 'v1', resource: 'deployments' },
      name: object.metadata.name,
      namespace: object.metadata.namespace,
      operation: 'CREATE',
      userInfo: { username: 'system:admin', groups: ['system:masters', 'system:authenticated'] },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

/** The object the mutate rule should produce from `object` (the contract's two rules). */
export function expectedMutation(object) {
  const out = structuredClone(object);
  out.metadata.labels = { ...out.metadata.labels, 'bench.annex.dev/mutated': 'true' };
  for (const c of out.spec.template.spec.containers) {
    if (!c.resources?.requests)
      c.resources = { ...c.resources, requests: { cpu: '100m', memory: '128Mi' } };
  }
  return out;
}
