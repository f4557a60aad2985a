import { describe, expect, it } from 'vitest';
import { applyDefaults } from './apply.js';
import { defaultPodTemplateSpec } from './pod.js';
import type { JsonObject } from './util.js';

const template = () => ({
  metadata: { labels: { app: 'web' } },
  spec: {
    containers: [{ name: 'web', image: 'nginx:1.27', resources: { limits: { cpu: '1' } } }],
  },
});

const templateDefaults = {
  dnsPolicy: 'ClusterFirst',
  restartPolicy: 'Always',
  schedulerName: 'default-scheduler',
  securityContext: {},
  terminationGracePeriodSeconds: 30,
};

describe('Deployment', () => {
  const deploy = () => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: { selector: { matchLabels: { app: 'web' } }, template: template() },
  });

  it('gets strategy, replicas, history and deadline, and pod-template defaults', () => {
    const out = applyDefaults(deploy(), { admissionPlugins: true }) as { spec: JsonObject };
    expect(out.spec).toMatchObject({
      replicas: 1,
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      strategy: {
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: '25%', maxSurge: '25%' },
      },
    });
    const t = out.spec.template as { spec: JsonObject };
    expect(t.spec).toMatchObject(templateDefaults);
    // Pod-only defaults and admission plugins never touch templates.
    expect(t.spec.enableServiceLinks).toBeUndefined();
    expect(t.spec.priority).toBeUndefined();
    expect(t.spec.volumes).toBeUndefined();
    const c = (t.spec.containers as JsonObject[])[0];
    expect(c).toMatchObject({
      imagePullPolicy: 'IfNotPresent',
      resources: { limits: { cpu: '1' } },
    });
    expect((c?.resources as JsonObject).requests).toBeUndefined();
  });

  it('keeps user values, and Recreate gets no rollingUpdate', () => {
    const d = deploy() as { spec: JsonObject };
    Object.assign(d.spec, { replicas: 0, strategy: { type: 'Recreate' }, revisionHistoryLimit: 2 });
    const out = applyDefaults(d) as { spec: JsonObject };
    expect(out.spec.replicas).toBe(0);
    expect(out.spec.revisionHistoryLimit).toBe(2);
    expect(out.spec.strategy).toEqual({ type: 'Recreate' });
  });

  it('fills only the missing half of rollingUpdate', () => {
    const d = deploy() as { spec: JsonObject };
    d.spec.strategy = { rollingUpdate: { maxSurge: 0 } };
    const out = applyDefaults(d) as { spec: JsonObject };
    expect(out.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 0, maxUnavailable: '25%' },
    });
  });
});

describe('other workloads', () => {
  it('StatefulSet', () => {
    const out = applyDefaults({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        template: template(),
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['RWO'] } }],
      },
    }) as { spec: JsonObject };
    expect(out.spec).toMatchObject({
      podManagementPolicy: 'OrderedReady',
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      replicas: 1,
      revisionHistoryLimit: 10,
      persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Retain', whenScaled: 'Retain' },
      volumeClaimTemplates: [
        {
          metadata: { name: 'data' },
          spec: { accessModes: ['RWO'], volumeMode: 'Filesystem' },
          status: { phase: 'Pending' },
        },
      ],
    });
  });

  it('DaemonSet', () => {
    const out = applyDefaults({
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      spec: { template: template() },
    }) as { spec: JsonObject };
    expect(out.spec).toMatchObject({
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      revisionHistoryLimit: 10,
    });
  });

  it('ReplicaSet', () => {
    const out = applyDefaults({
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      spec: { template: template() },
    });
    expect((out as { spec: JsonObject }).spec).toMatchObject({
      replicas: 1,
      template: { spec: templateDefaults },
    });
  });

  it('Job: completions/parallelism, backoff, labels from template', () => {
    const out = applyDefaults({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j' },
      spec: { template: template() },
    }) as { metadata: JsonObject; spec: JsonObject };
    expect(out.spec).toMatchObject({
      completions: 1,
      parallelism: 1,
      backoffLimit: 6,
      completionMode: 'NonIndexed',
      suspend: false,
      podReplacementPolicy: 'TerminatingOrFailed',
      manualSelector: false,
    });
    expect(out.metadata.labels).toEqual({ app: 'web' });
  });

  it('Job: completions set leaves parallelism 1 and keeps completions', () => {
    const out = applyDefaults({
      apiVersion: 'batch/v1',
      kind: 'Job',
      spec: { completions: 5, template: template() },
    }) as { spec: JsonObject };
    expect(out.spec.completions).toBe(5);
    expect(out.spec.parallelism).toBe(1);
  });

  it('CronJob: its own defaults, and only pod-template defaults inside jobTemplate', () => {
    const out = applyDefaults({
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      spec: { schedule: '* * * * *', jobTemplate: { spec: { template: template() } } },
    }) as { spec: JsonObject };
    expect(out.spec).toMatchObject({
      concurrencyPolicy: 'Allow',
      suspend: false,
      successfulJobsHistoryLimit: 3,
      failedJobsHistoryLimit: 1,
      jobTemplate: { spec: { template: { spec: templateDefaults } } },
    });
    const jobSpec = (out.spec.jobTemplate as { spec: JsonObject }).spec;
    expect(jobSpec.backoffLimit).toBeUndefined();
  });
});

describe('Service and core kinds', () => {
  it('ClusterIP Service', () => {
    const out = applyDefaults({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ port: 80 }, { port: 443, targetPort: 'https' }] },
    }) as { spec: JsonObject };
    expect(out.spec).toEqual({
      selector: { app: 'web' },
      ports: [
        { port: 80, protocol: 'TCP', targetPort: 80 },
        { port: 443, protocol: 'TCP', targetPort: 'https' },
      ],
      sessionAffinity: 'None',
      type: 'ClusterIP',
      internalTrafficPolicy: 'Cluster',
    });
  });

  it('LoadBalancer with ClientIP affinity', () => {
    const out = applyDefaults({
      apiVersion: 'v1',
      kind: 'Service',
      spec: { type: 'LoadBalancer', sessionAffinity: 'ClientIP', ports: [{ port: 80 }] },
    }) as { spec: JsonObject };
    expect(out.spec).toMatchObject({
      externalTrafficPolicy: 'Cluster',
      internalTrafficPolicy: 'Cluster',
      allocateLoadBalancerNodePorts: true,
      sessionAffinityConfig: { clientIP: { timeoutSeconds: 10800 } },
    });
  });

  it('ExternalName gets no traffic policies', () => {
    const out = applyDefaults({
      apiVersion: 'v1',
      kind: 'Service',
      spec: { type: 'ExternalName', externalName: 'example.com' },
    }) as { spec: JsonObject };
    expect(out.spec).toEqual({
      type: 'ExternalName',
      externalName: 'example.com',
      sessionAffinity: 'None',
    });
  });

  it('Secret, Namespace, PVC', () => {
    expect(applyDefaults({ apiVersion: 'v1', kind: 'Secret' })).toMatchObject({ type: 'Opaque' });
    expect(
      applyDefaults({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }),
    ).toMatchObject({ metadata: { labels: { 'kubernetes.io/metadata.name': 'team-a' } } });
    expect(applyDefaults({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', spec: {} })).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      spec: { volumeMode: 'Filesystem' },
      status: { phase: 'Pending' },
    });
  });
});

describe('defaultPodTemplateSpec', () => {
  it('defaults a custom resource template without touching the input', () => {
    const input = { spec: { containers: [{ name: 'x', image: 'busybox' }] } };
    const out = defaultPodTemplateSpec(input) as unknown as {
      metadata: JsonObject;
      spec: JsonObject;
    };
    expect(input).toEqual({ spec: { containers: [{ name: 'x', image: 'busybox' }] } });
    expect(out.metadata).toEqual({});
    expect(out.spec).toMatchObject(templateDefaults);
    expect((out.spec.containers as JsonObject[])[0]).toMatchObject({ imagePullPolicy: 'Always' });
  });
});
