import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../admission/review.js';
import { eventFor } from './recording.js';
import type { PolicyDecision } from './types.js';

const create: AdmissionRequest = {
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  name: 'legacy-web',
  namespace: 'shop',
  operation: 'CREATE',
  userInfo: { username: 'alice' },
  object: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'legacy-web' } },
  oldObject: null,
};
const exempt: PolicyDecision = {
  policy: 'require-team',
  rule: 'team',
  action: 'Exempt',
  causes: [],
  exception: 'shop/legacy',
};

describe('eventFor an exemption', () => {
  it('regards the object, Normal, reason PolicyExempted, the exception named', () => {
    const { namespace, event } = eventFor(exempt, create);
    expect(namespace).toBe('shop');
    expect(event).toEqual({
      regarding: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        namespace: 'shop',
        name: 'legacy-web',
      },
      reason: 'PolicyExempted',
      action: 'Exempted',
      type: 'Normal',
      note: 'AdmissionPolicy require-team rule team exempted CREATE of Deployment shop/legacy-web by PolicyException shop/legacy',
    });
  });

  it('regards the namespace when another rule refused the create (there is no object)', () => {
    const { event } = eventFor(exempt, create, true);
    expect(event.regarding).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      namespace: 'shop',
      name: 'shop',
    });
    expect(event.related).toMatchObject({ kind: 'Deployment', name: 'legacy-web' });
  });
});
