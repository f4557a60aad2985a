// The AdmissionReviews the soak sends: an apps/v1 Deployment CREATE padded to a size with
// environment variables (as large pod templates are), to annex's built-in webhooks —
// names (validating; a valid name is allowed, a name with an upper-case letter denied
// with 422) and defaults (mutating; no requests and no managed-by label, so a patch).
// Built by the benches' builder (bench/reviews.mjs) with the soak's own object, and split
// around the uid so the generator can number each request without re-serializing.
import { deploymentReview } from '../../bench/reviews.mjs';

const UID_MARK = '@@UID@@';

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
  const text = deploymentReview({
    bytes,
    name,
    deployment: {
      namespace: 'soak',
      annotations: null,
      containers: [{ name: 'web-0', image: 'nginx:1.27', env: [] }],
      podSpec: null,
    },
    review: { uid: UID_MARK, userInfo: { username: 'soak', groups: ['system:authenticated'] } },
    pad: {},
  });
  const [pre, post] = text.split(UID_MARK) as [string, string];
  return { path, pre, post, expect, weight };
}

/** Validate and mutate mixed: half mutations, the rest mostly allowed, some denied. */
export function soakTemplates(bytes = 10 * 1024): Template[] {
  return [
    template('/mutate/defaults.annex.dev', 'web', 'patched', bytes, 5),
    template('/validate/names.annex.dev', 'web', 'allowed', bytes, 4),
    template('/validate/names.annex.dev', 'Web_1', 'denied', bytes, 1),
  ];
}
