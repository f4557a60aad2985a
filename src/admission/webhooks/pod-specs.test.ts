import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../review.js';
import { podSpecOfRequest } from './pod-specs.js';

const deploymentRequest = (containers: unknown[]): AdmissionRequest => ({
  uid: 'u',
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  operation: 'CREATE',
  object: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { template: { spec: { containers } } },
  },
});

describe('podSpecOf (podSpecOfRequest)', () => {
  it('returns the containers themselves: a change to one lands in the request object', () => {
    const req = deploymentRequest([{ name: 'app', image: 'nginx' }, { name: 'sidecar' }]);
    const pod = podSpecOfRequest(req)!;
    const [app, sidecar] = pod.containers;
    app!.image = 'nginx:1.27';
    app!.securityContext = { allowPrivilegeEscalation: false };
    sidecar!.image = 'busybox:1.36';
    expect((req.object as any).spec.template.spec.containers).toEqual([
      { name: 'app', image: 'nginx:1.27', securityContext: { allowPrivilegeEscalation: false } },
      { name: 'sidecar', image: 'busybox:1.36' },
    ]);
    // The spec is the object's too, and sees the same containers.
    expect(pod.spec).toBe((req.object as any).spec.template.spec);
  });

  it("reads name and image as strings and adds the field path, which is not the object's", () => {
    const req = deploymentRequest([{ image: 7 }, 'not an object']);
    const [first, second] = podSpecOfRequest(req)!.containers;
    expect([first!.path, first!.name, first!.image]).toEqual([
      'spec.template.spec.containers[0]',
      '',
      '',
    ]);
    expect(second!.path).toBe('spec.template.spec.containers[1]');
    expect(() => {
      (first as { path: string }).path = 'elsewhere';
    }).toThrow(TypeError);
    expect(JSON.stringify(req.object)).not.toContain('path');
    expect(Object.keys(first!)).toEqual(['image']);
  });
});
