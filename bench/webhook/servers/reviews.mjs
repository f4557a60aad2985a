// AdmissionReviews for the reference-server check and the quick CPU loop: an apps/v1
// Deployment CREATE padded to about `kb` KB with env vars in its first container.
// Built by the benches' builder (bench/reviews.mjs) with the contract's own object.
import { randomUUID } from 'node:crypto';
import { admissionReview, deployment as benchDeployment, padEnv } from '../../reviews.mjs';

export function deployment({ name = 'bench-app', labels = { app: 'bench' }, kb = 10 } = {}) {
  const object = benchDeployment({
    name,
    namespace: 'default',
    labels,
    annotations: null,
    app: 'bench',
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
    podSpec: null,
  });
  const env = object.spec.template.spec.containers[0].env;
  padEnv(env, () => JSON.stringify(object).length, kb * 1024 - 300, { prefix: 'BENCH_PADDING_' });
  return object;
}

export const review = (object) =>
  admissionReview(object, {
    uid: randomUUID(),
    userInfo: { username: 'system:admin', groups: ['system:masters', 'system:authenticated'] },
  });

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
