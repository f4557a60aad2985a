// The AdmissionRequest the policy unit tests evaluate: a ConfigMap `c` created in `shop`.
import type { AdmissionRequest } from '../../src/admission/review.js';

export function configMapRequest(data: Record<string, unknown>): AdmissionRequest {
  return {
    uid: 'u',
    kind: { group: '', version: 'v1', kind: 'ConfigMap' },
    resource: { group: '', version: 'v1', resource: 'configmaps' },
    name: 'c',
    namespace: 'shop',
    operation: 'CREATE',
    userInfo: {},
    object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data },
  };
}
