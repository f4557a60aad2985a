import { describe, expect, it } from 'vitest';
import { applyDefaults as defaults } from './apply.js';
import { applyServerFields } from './server-fields.js';

/** Defaults of a JSON object, read back field by field. */
const applyDefaults = (obj: unknown, options?: Parameters<typeof defaults>[1]): any =>
  defaults(obj, options);

const sts = (updateStrategy?: object) =>
  applyDefaults({
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 's' },
    spec: { ...(updateStrategy ? { updateStrategy } : {}), template: { spec: { containers: [] } } },
  }).spec;

describe('defaults measured on v1.37.2', () => {
  it('StatefulSet: rollingUpdate only for a strategy without a type', () => {
    expect(sts().updateStrategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { partition: 0, maxUnavailable: 1 },
    });
    expect(sts({ type: 'RollingUpdate' }).updateStrategy).toEqual({ type: 'RollingUpdate' });
    expect(sts({ type: 'OnDelete' }).updateStrategy).toEqual({ type: 'OnDelete' });
  });
  it('HPA v2: cpu 80 %, and the rules a given behavior lacks', () => {
    const hpa = applyDefaults({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      spec: { maxReplicas: 3, behavior: { scaleDown: { stabilizationWindowSeconds: 60 } } },
    });
    expect(hpa.spec.minReplicas).toBe(1);
    expect(hpa.spec.metrics[0].resource.target).toEqual({
      type: 'Utilization',
      averageUtilization: 80,
    });
    expect(hpa.spec.behavior.scaleDown).toEqual({
      stabilizationWindowSeconds: 60,
      selectPolicy: 'Max',
      policies: [{ type: 'Percent', value: 100, periodSeconds: 15 }],
    });
    expect(hpa.spec.behavior.scaleUp.policies).toHaveLength(2);
  });
  it('NetworkPolicy: policyTypes from the rules, TCP ports', () => {
    const np = applyDefaults({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      spec: { podSelector: {}, egress: [{ ports: [{ port: 53 }] }] },
    });
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(np.spec.egress[0].ports[0].protocol).toBe('TCP');
  });
  it('Secret: stringData is merged into data as base64 and dropped', () => {
    const s = applyDefaults({
      apiVersion: 'v1',
      kind: 'Secret',
      data: { a: 'eA==' },
      stringData: { b: 'y' },
    });
    expect(s).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      data: { a: 'eA==', b: 'eQ==' },
    });
  });
  it('RBAC: rules null, User and Group subjects in the rbac group', () => {
    expect(
      applyDefaults({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role' }).rules,
    ).toBeNull();
    const rb = applyDefaults({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      subjects: [
        { kind: 'User', name: 'u' },
        { kind: 'ServiceAccount', name: 'd' },
      ],
    });
    expect(rb.subjects.map((s: { apiGroup?: string }) => s.apiGroup)).toEqual([
      'rbac.authorization.k8s.io',
      undefined,
    ]);
  });
  it('PVC protection finalizer only with the admission plugins', () => {
    const pvc = {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'p' },
      spec: {},
    };
    expect(applyDefaults(pvc, { admissionPlugins: true }).metadata.finalizers).toEqual([
      'kubernetes.io/pvc-protection',
    ]);
    expect(applyDefaults(pvc).metadata).toEqual({ name: 'p' });
  });
  it('Service placeholders for what the registry allocates', () => {
    const svc: any = applyServerFields(
      {
        apiVersion: 'v1',
        kind: 'Service',
        spec: { type: 'LoadBalancer', externalTrafficPolicy: 'Local', ports: [{ port: 80 }] },
      },
      { allocated: '<allocated>', uid: false },
    );
    expect(svc.spec).toMatchObject({
      clusterIP: '<allocated>',
      clusterIPs: ['<allocated>'],
      healthCheckNodePort: '<allocated>',
      ports: [{ port: 80, nodePort: '<allocated>' }],
    });
  });
});
