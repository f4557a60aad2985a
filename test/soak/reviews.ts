// The AdmissionReviews the soak sends: an apps/v1 Deployment CREATE padded to a size with
// environment variables (as large pod templates are), to annex's built-in webhooks —
// names (validating; a valid name is allowed, a name with an upper-case letter denied
// with 422) and defaults (mutating; no requests and no managed-by label, so a patch).
// Split around the uid so the generator can number each request without re-serializing.

const UID_MARK = '@@UID@@';

function deployment(name: string, i: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'soak', labels: { app: 'web' } },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: {
          containers: [
            { name: `web-${i}`, image: 'nginx:1.27', env: [] as { name: string; value: string }[] },
          ],
        },
      },
    },
  };
}

function review(object: ReturnType<typeof deployment>): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: UID_MARK,
      kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      resource: { group: 'apps', version: 'v1', resource: 'deployments' },
      requestKind: { group: 'apps', version: 'v1', kind: 'Deployment' },
      requestResource: { group: 'apps', version: 'v1', resource: 'deployments' },
      name: object.metadata.name,
      namespace: 'soak',
      operation: 'CREATE',
      userInfo: { username: 'soak', groups: ['system:authenticated'] },
      object,
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  });
}

/** One template: the review split at its uid, padded to about `bytes`. */
export interface Template {
  path: string;
  pre: string;
  post: string;
  expect: 'allowed' | 'denied' | 'patched';
  weight: number;
}

function template(
  path: string,
  name: string,
  expect: Template['expect'],
  bytes: number,
  weight: number,
): Template {
  const object = deployment(name, 0);
  const env: { name: string; value: string }[] = object.spec.template.spec.containers[0]!.env;
  for (let n = 0; review(object).length < bytes; n++)
    env.push({ name: `VAR_${n}`, value: `value-${n}-${'x'.repeat(40)}` });
  const [pre, post] = review(object).split(UID_MARK) as [string, string];
  return { path, pre, post, expect, weight };
}

/** Validate and mutate mixed: half mutations, the rest mostly allowed, some denied. */
export function soakTemplates(bytes = 10 * 1024): Template[] {
  return [
    template('/mutate/defaults', 'web', 'patched', bytes, 5),
    template('/validate/names', 'web', 'allowed', bytes, 4),
    template('/validate/names', 'Web_1', 'denied', bytes, 1),
  ];
}
