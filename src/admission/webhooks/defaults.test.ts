import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/load.js';
import type { AdmissionRequest } from '../review.js';
import { applyAnnexDefaults, MANAGED_BY } from './defaults.js';

const settings = loadConfig().admission.defaults;
const req = (kind: string, group: string, object: any): AdmissionRequest => ({
  uid: 'u',
  kind: { group, version: 'v1', kind },
  resource: { group, version: 'v1', resource: 'x' },
  operation: 'CREATE',
  namespace: 'ns',
  object,
});
const mutated = (v: ReturnType<typeof applyAnnexDefaults>): any =>
  v.allowed ? v.object : undefined;

describe('defaults webhook', () => {
  it('adds requests and managed-by to a Pod where absent, never over user values', () => {
    const pod = {
      metadata: { name: 'nu', labels: { run: 'nu' } },
      spec: {
        containers: [
          { name: 'a', image: 'nginx' },
          {
            name: 'b',
            image: 'nginx',
            resources: { requests: { cpu: '1' }, limits: { memory: '1Gi' } },
          },
        ],
      },
    };
    const verdict = applyAnnexDefaults(req('Pod', '', pod), settings);
    expect(verdict.warnings).toEqual([
      'annex: container "a" had no cpu/memory request; defaulted to cpu=100m, memory=128Mi',
    ]);
    const out = mutated(verdict);
    expect(out.metadata.labels).toEqual({ run: 'nu', [MANAGED_BY]: 'annex' });
    expect(out.spec.containers[0].resources).toEqual({
      requests: { cpu: '100m', memory: '128Mi' },
    });
    expect(out.spec.containers[1].resources).toEqual({
      requests: { cpu: '1' },
      limits: { memory: '1Gi' },
    });
  });

  it('can be turned off field by field', () => {
    const out = mutated(
      applyAnnexDefaults(
        req('Pod', '', { metadata: { name: 'x' }, spec: { containers: [{ name: 'a' }] } }),
        {
          ...settings,
          managedBy: '',
          requests: { cpu: '', memory: '64Mi' },
        },
      ),
    );
    expect(out.metadata.labels).toBeUndefined();
    expect(out.spec.containers[0].resources).toEqual({ requests: { memory: '64Mi' } });
  });

  it("applies the API server's pod-template defaults inside a custom resource", () => {
    const cr = {
      metadata: { name: 'w' },
      spec: {
        runner: { template: { spec: { containers: [{ name: 'c', image: 'nginx:1.27' }] } } },
      },
    };
    const out = mutated(applyAnnexDefaults(req('Worker', 'example.annex.dev', cr), settings));
    const spec = out.spec.runner.template.spec;
    expect(spec).toMatchObject({
      restartPolicy: 'Always',
      dnsPolicy: 'ClusterFirst',
      schedulerName: 'default-scheduler',
      terminationGracePeriodSeconds: 30,
      securityContext: {},
    });
    expect(spec.containers[0]).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      terminationMessagePath: '/dev/termination-log',
      resources: { requests: { cpu: '100m', memory: '128Mi' } },
    });
  });
});
