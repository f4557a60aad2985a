import { describe, expect, it } from 'vitest';
import { applyDefaults } from './apply.js';
import { defaultPullPolicy } from './container.js';
import type { JsonObject } from './util.js';

// The seed chapter's pod-nu.yaml (9 lines).
const podNu = () => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'nu' },
  spec: { containers: [{ name: 'c', image: 'registry.k8s.io/e2e-test-images/agnhost:2.61' }] },
});

const spec = (o: unknown) => (o as { spec: JsonObject }).spec;

describe('Pod scheme defaults', () => {
  it('gives the seed bare Pod every default and plugin addition of the chapter', () => {
    const out = applyDefaults(podNu(), { admissionPlugins: true, randomSuffix: () => '75xck' });
    const mount = '/var/run/secrets/kubernetes.io/serviceaccount';
    expect(spec(out)).toEqual({
      containers: [
        {
          image: 'registry.k8s.io/e2e-test-images/agnhost:2.61',
          imagePullPolicy: 'IfNotPresent',
          name: 'c',
          resources: {},
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          volumeMounts: [{ mountPath: mount, name: 'kube-api-access-75xck', readOnly: true }],
        },
      ],
      dnsPolicy: 'ClusterFirst',
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
      priority: 0,
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      securityContext: {},
      serviceAccount: 'default',
      serviceAccountName: 'default',
      terminationGracePeriodSeconds: 30,
      tolerations: [
        {
          effect: 'NoExecute',
          key: 'node.kubernetes.io/not-ready',
          operator: 'Exists',
          tolerationSeconds: 300,
        },
        {
          effect: 'NoExecute',
          key: 'node.kubernetes.io/unreachable',
          operator: 'Exists',
          tolerationSeconds: 300,
        },
      ],
      volumes: [
        {
          name: 'kube-api-access-75xck',
          projected: {
            defaultMode: 420,
            sources: [
              { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
              {
                configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] },
              },
              {
                downwardAPI: {
                  items: [
                    {
                      path: 'namespace',
                      fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' },
                    },
                  ],
                },
              },
            ],
          },
        },
      ],
    });
  });

  it('without admission plugins adds only scheme defaults', () => {
    const s = spec(applyDefaults(podNu()));
    expect(Object.keys(s).sort()).toEqual([
      'containers',
      'dnsPolicy',
      'enableServiceLinks',
      'restartPolicy',
      'schedulerName',
      'securityContext',
      'terminationGracePeriodSeconds',
    ]);
  });

  it('does not mutate its input', () => {
    const input = podNu();
    const before = JSON.stringify(input);
    applyDefaults(input, { admissionPlugins: true });
    expect(JSON.stringify(input)).toBe(before);
  });

  it('draws a 5-character suffix from the no-vowel alphabet by default', () => {
    const out = applyDefaults(podNu(), { admissionPlugins: true });
    const volumes = spec(out).volumes as JsonObject[];
    expect(volumes[0]?.name).toMatch(/^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
  });

  it('never overrides user-set values', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        dnsPolicy: 'None',
        restartPolicy: 'Never',
        terminationGracePeriodSeconds: 0,
        schedulerName: 'mine',
        securityContext: { runAsNonRoot: true },
        enableServiceLinks: false,
        serviceAccountName: 'robot',
        preemptionPolicy: 'Never',
        tolerations: [{ operator: 'Exists' }],
        containers: [
          {
            name: 'c',
            image: 'nginx',
            imagePullPolicy: 'Never',
            terminationMessagePolicy: 'FallbackToLogsOnError',
            ports: [{ containerPort: 53, protocol: 'UDP' }],
            volumeMounts: [
              { name: 'own', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
            ],
          },
        ],
        volumes: [{ name: 'own', secret: { secretName: 's', defaultMode: 256 } }],
      },
    };
    const s = spec(applyDefaults(pod, { admissionPlugins: true }));
    expect(s.dnsPolicy).toBe('None');
    expect(s.restartPolicy).toBe('Never');
    expect(s.terminationGracePeriodSeconds).toBe(0);
    expect(s.schedulerName).toBe('mine');
    expect(s.securityContext).toEqual({ runAsNonRoot: true });
    expect(s.enableServiceLinks).toBe(false);
    expect(s.serviceAccountName).toBe('robot');
    expect(s.serviceAccount).toBe('robot');
    expect(s.preemptionPolicy).toBe('Never');
    // A wildcard toleration already covers both taints.
    expect(s.tolerations).toEqual([{ operator: 'Exists' }]);
    const c = (s.containers as JsonObject[])[0];
    expect(c?.imagePullPolicy).toBe('Never');
    expect(c?.terminationMessagePolicy).toBe('FallbackToLogsOnError');
    expect(c?.ports).toEqual([{ containerPort: 53, protocol: 'UDP' }]);
    // The container already mounts the token path: no token volume is added.
    expect(s.volumes).toEqual([{ name: 'own', secret: { secretName: 's', defaultMode: 256 } }]);
  });

  it('skips the token volume when automount is off', () => {
    const pod = podNu() as unknown as { spec: JsonObject };
    pod.spec.automountServiceAccountToken = false;
    const s = spec(applyDefaults(pod, { admissionPlugins: true }));
    expect(s.volumes).toBeUndefined();
    expect(s.serviceAccountName).toBe('default');
  });

  it('copies requests from limits (Pods only) and canonicalises quantities', () => {
    const pod = podNu() as unknown as { spec: { containers: JsonObject[] } };
    pod.spec.containers[0]!.resources = { limits: { cpu: '0.5', memory: '1024Mi' } };
    const c = (spec(applyDefaults(pod)).containers as JsonObject[])[0];
    expect(c?.resources).toEqual({
      limits: { cpu: '500m', memory: '1Gi' },
      requests: { cpu: '500m', memory: '1Gi' },
    });
  });

  it('defaults probes, handlers, env fieldRefs, ports and volumes', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p' },
      spec: {
        hostNetwork: true,
        containers: [
          {
            name: 'c',
            image: 'nginx:1.27',
            ports: [{ containerPort: 8080 }],
            livenessProbe: { httpGet: { port: 8080 } },
            readinessProbe: { grpc: { port: 9000 }, periodSeconds: 5 },
            lifecycle: { preStop: { httpGet: { port: 80 } } },
            env: [{ name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } }],
          },
        ],
        volumes: [
          { name: 'scratch' },
          { name: 'cm', configMap: { name: 'x' } },
          { name: 'h', hostPath: { path: '/tmp' } },
          { name: 'd', downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'x' } }] } },
          { name: 'p', projected: { sources: [{ serviceAccountToken: { path: 't' } }] } },
        ],
      },
    };
    const s = spec(applyDefaults(pod));
    const c = (s.containers as JsonObject[])[0]!;
    expect(c.ports).toEqual([{ containerPort: 8080, hostPort: 8080, protocol: 'TCP' }]);
    expect(c.livenessProbe).toEqual({
      httpGet: { port: 8080, path: '/', scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(c.readinessProbe).toMatchObject({ grpc: { port: 9000, service: '' }, periodSeconds: 5 });
    expect(c.lifecycle).toEqual({ preStop: { httpGet: { port: 80, path: '/', scheme: 'HTTP' } } });
    expect(c.env).toEqual([
      {
        name: 'NS',
        valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } },
      },
    ]);
    expect(s.volumes).toEqual([
      { name: 'scratch', emptyDir: {} },
      { name: 'cm', configMap: { name: 'x', defaultMode: 420 } },
      { name: 'h', hostPath: { path: '/tmp', type: '' } },
      {
        name: 'd',
        downwardAPI: {
          defaultMode: 420,
          items: [{ path: 'n', fieldRef: { apiVersion: 'v1', fieldPath: 'x' } }],
        },
      },
      {
        name: 'p',
        projected: {
          defaultMode: 420,
          sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 3600 } }],
        },
      },
    ]);
  });

  it('returns unknown kinds unchanged', () => {
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, data: { a: 'b' } };
    expect(applyDefaults(cm)).toEqual(cm);
  });
});

describe('defaultPullPolicy', () => {
  it.each([
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['nginx:1.27', 'IfNotPresent'],
    [`nginx@sha256:${'a'.repeat(64)}`, 'IfNotPresent'],
    [`nginx:latest@sha256:${'a'.repeat(64)}`, 'Always'],
    ['localhost:5000/team/app', 'Always'],
    ['localhost:5000/team/app:v2', 'IfNotPresent'],
    ['NGINX', 'IfNotPresent'],
    ['', 'IfNotPresent'],
  ])('%s → %s', (image, policy) => {
    expect(defaultPullPolicy(image)).toBe(policy);
  });
});
