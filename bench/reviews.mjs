// The one builder of the AdmissionReviews that the benches and the soak send: an object
// (by default an apps/v1 Deployment CREATE) padded to a size with env vars in one
// container, as large pod templates are. Each caller's payload is part of its published
// figures, so every difference between the old copies is a parameter here and each caller
// passes its own (bench/webhook/run.mjs, bench/policy.bench.mjs,
// bench/admission-memory.bench.mjs, bench/webhook/servers/reviews.mjs, test/soak/reviews.ts).
// Types: reviews.d.mts.

/** The webhook bench's sizes (bench/BENCH-CONTRACT): reviews of about 5, 10 and 50 KB. */
export const SIZES_KB = [5, 10, 50];

export const DEPLOYMENTS = {
  group: 'apps',
  version: 'v1',
  kind: 'Deployment',
  resource: 'deployments',
};
export const PODS = { group: '', version: 'v1', kind: 'Pod', resource: 'pods' };

const OPTIONS = { CREATE: 'CreateOptions', UPDATE: 'UpdateOptions', DELETE: 'DeleteOptions' };

/** A uid numbered `i` under `prefix` (the last 12 digits). */
export const numberedUid = (i, prefix = '00000000-0000-4000-8000-') =>
  `${prefix}${String(i).padStart(12, '0')}`;

/** `value` unless it is null (left out of the object, as JSON.stringify leaves undefined). */
const given = (value) => (value === null ? undefined : value);

/**
 * The AdmissionReview for `object`, its request's fields in the API server's order. A null
 * field is left out; `full: false` leaves out requestKind, requestResource, oldObject and
 * options, as the shorter hand-written reviews do.
 */
export function admissionReview(
  object,
  {
    uid = numberedUid(0),
    type = DEPLOYMENTS,
    name = object.metadata?.name,
    namespace = object.metadata?.namespace,
    operation = 'CREATE',
    userInfo = { username: 'bench', groups: ['system:authenticated'] },
    oldObject = null,
    dryRun = false,
    full = true,
  } = {},
) {
  const kind = { group: type.group, version: type.version, kind: type.kind };
  const resource = { group: type.group, version: type.version, resource: type.resource };
  const request = {
    uid,
    kind,
    resource,
    requestKind: full ? kind : undefined,
    requestResource: full ? resource : undefined,
    name: given(name),
    namespace: given(namespace),
    operation,
    userInfo: given(userInfo),
    object,
    oldObject: full ? oldObject : undefined,
    dryRun: given(dryRun),
    options: full ? { apiVersion: 'meta.k8s.io/v1', kind: OPTIONS[operation] } : undefined,
  };
  for (const k of Object.keys(request)) if (request[k] === undefined) delete request[k];
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request };
}

/** The webhook bench's two containers: `web` without resource requests, `sidecar` with. */
export const webAndSidecar = () => [
  { name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }], env: [] },
  {
    name: 'sidecar',
    image: 'busybox:1.36',
    resources: { requests: { cpu: '10m', memory: '16Mi' } },
  },
];

/** An apps/v1 Deployment; a null labels, annotations or podSpec is left out (no key). */
export function deployment({
  name = 'web-0',
  namespace = 'bench',
  labels = { app: 'web' },
  annotations = { 'deployment.kubernetes.io/revision': '1' },
  replicas = 2,
  app = 'web',
  containers = webAndSidecar(),
  podSpec = { restartPolicy: 'Always', serviceAccountName: 'default' },
} = {}) {
  const metadata = { name, namespace };
  if (labels !== null) metadata.labels = labels;
  if (annotations !== null) metadata.annotations = annotations;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas,
      selector: { matchLabels: { app } },
      template: { metadata: { labels: { app } }, spec: { containers, ...podSpec } },
    },
  };
}

/**
 * Pads `env` with `{ name: PREFIX_n, value: value-n-xxx… }` until `size()` reaches
 * `target`; `digits` zero-pads n. `fit: true` instead adds as many as fit under `target`,
 * counted once from the size of the first (the webhook bench's way, equal-sized entries).
 */
export function padEnv(env, size, target, { prefix = 'VAR_', digits = 0, fit = false } = {}) {
  const entry = (n) => {
    const k = String(n).padStart(digits, '0');
    return { name: `${prefix}${k}`, value: `value-${k}-${'x'.repeat(40)}` };
  };
  if (fit) {
    const one = JSON.stringify(entry(0)).length;
    const count = Math.floor((target - size()) / (one + 1));
    for (let n = 0; n < count; n++) env.push(entry(n));
    return env;
  }
  for (let n = 0; size() < target; n++) env.push(entry(n));
  return env;
}

/**
 * A Deployment review padded to about `bytes` (the whole review's JSON), serialized. The
 * defaults are the webhook bench's review `i` (bench/BENCH-CONTRACT); `deployment` and
 * `review` are passed to deployment() and admissionReview(), `pad` to padEnv(), and
 * `padContainer` names the container whose env is padded.
 */
export function deploymentReview({
  bytes,
  i = 0,
  name = `web-${i}`,
  deployment: objectOptions = {},
  review: reviewOptions = {},
  pad = { digits: 4, fit: true },
  padContainer = 0,
}) {
  const object = deployment({ name, ...objectOptions });
  const options = { uid: numberedUid(i), ...reviewOptions };
  const text = () => JSON.stringify(admissionReview(object, options));
  const container = object.spec.template.spec.containers[padContainer];
  container.env ??= [];
  padEnv(container.env, () => text().length, bytes, pad);
  return text();
}

/** 16 distinct reviews (uid and name differ) of about `kb` KB, rotated by the load generator. */
export const reviewSet = (kb, count = 16) =>
  Array.from({ length: count }, (_, i) => deploymentReview({ bytes: kb * 1024, i }));
