// The AdmissionReviews every webhook server under test answers (bench/BENCH-CONTRACT):
// a Deployment CREATE of about 5, 10 or 50 KB, padded with env vars as large specs are.
// Two containers: `web` without resource requests (the mutation defaults them) and
// `sidecar` with its own (kept).
export const SIZES_KB = [5, 10, 50];

export function deploymentReview(targetBytes, i = 0, name = `web-${i}`) {
  const env = [];
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: 'bench',
      labels: { app: 'web' },
      annotations: { 'deployment.kubernetes.io/revision': '1' },
    },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            { name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }], env },
            {
              name: 'sidecar',
              image: 'busybox:1.36',
              resources: { requests: { cpu: '10m', memory: '16Mi' } },
            },
          ],
          restartPolicy: 'Always',
          serviceAccountName: 'default',
        },
      },
    },
  };
  const review = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      requestKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      requestResource: { group: 'apps', version: 'v1', resource: 'deployments' },
      name,
      namespace: 'bench',
      operation: 'CREATE',
      userInfo: { username: 'bench', groups: ['system:authenticated'] },
      object: deployment,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
  const one = JSON.stringify({ name: 'VAR_0000', value: `value-0000-${'x'.repeat(40)}` }).length;
  const missing = targetBytes - JSON.stringify(review).length;
  for (let n = 0; n < Math.floor(missing / (one + 1)); n++) {
    const k = String(n).padStart(4, '0');
    env.push({ name: `VAR_${k}`, value: `value-${k}-${'x'.repeat(40)}` });
  }
  return JSON.stringify(review);
}

/** 16 distinct reviews (uid and name differ) of about `kb` KB, rotated by the load generator. */
export const reviewSet = (kb, count = 16) =>
  Array.from({ length: count }, (_, i) => deploymentReview(kb * 1024, i));
