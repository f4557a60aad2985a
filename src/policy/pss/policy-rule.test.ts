// The `podSecurity` validate rule of an AdmissionPolicy: compiled, evaluated on Pods and the
// pod templates of workloads, and kept on the webhook (it has no CEL form).
import { describe, expect, it } from 'vitest';
import type { AdmissionRequest } from '../../admission/review.js';
import type { KubeObject } from '../../core/types.js';
import { compileToCel } from '../cel/index.js';
import { compilePolicy } from '../compile.js';
import { evaluate } from '../evaluate.js';

const policy = (validate: unknown[], kinds = ['Pod', 'apps/Deployment', 'batch/CronJob']) =>
  compilePolicy({
    apiVersion: 'policy.annex.dev/v1alpha1',
    kind: 'AdmissionPolicy',
    metadata: { name: 'pss' },
    spec: { match: { kinds }, validate },
  });

const request = (object: KubeObject): AdmissionRequest => {
  const apiVersion = String(object.apiVersion);
  const kind = String(object.kind);
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return {
    uid: 'u',
    kind: { group: group!, version: version!, kind },
    resource: { group: group!, version: version!, resource: `${kind.toLowerCase()}s` },
    name: object.metadata?.name ?? '',
    namespace: 'shop',
    operation: 'CREATE',
    userInfo: {},
    object,
  } as AdmissionRequest;
};

const podSpec = {
  containers: [{ name: 'app', image: 'nginx', securityContext: { privileged: true } }],
};
const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: podSpec } as KubeObject;
const template = { metadata: { labels: { app: 'w' } }, spec: podSpec };
const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'w' },
  spec: { selector: { matchLabels: { app: 'w' } }, template },
} as KubeObject;
const cronJob = {
  apiVersion: 'batch/v1',
  kind: 'CronJob',
  metadata: { name: 'c' },
  spec: { schedule: '* * * * *', jobTemplate: { spec: { template } } },
} as KubeObject;

describe('the podSecurity validate rule', () => {
  const baseline = policy([{ name: 'pss', podSecurity: { level: 'baseline' } }]);

  it("denies with PodSecurity's text, at the pod spec of a Pod or a workload's template", () => {
    const causes = (o: KubeObject) => evaluate([baseline], request(o)).decisions[0]?.causes;
    const text =
      'Forbidden: violates PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)';
    expect(causes(pod)).toEqual([{ field: 'spec', message: text }]);
    expect(causes(deployment)).toEqual([{ field: 'spec.template.spec', message: text }]);
    expect(causes(cronJob)).toEqual([
      { field: 'spec.jobTemplate.spec.template.spec', message: text },
    ]);
    expect(evaluate([baseline], request(pod)).allowed).toBe(false);
  });

  it('admits a compliant pod, and objects without a pod', () => {
    const ok = { ...pod, spec: { containers: [{ name: 'app', image: 'nginx' }] } } as KubeObject;
    expect(evaluate([baseline], request(ok)).allowed).toBe(true);
    const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 's' }, spec: {} };
    const any = policy([{ name: 'pss', podSecurity: { level: 'restricted' } }], ['Service']);
    expect(evaluate([any], request(service as KubeObject)).allowed).toBe(true);
  });

  it('honours the version and the message override', () => {
    const userns = {
      ...pod,
      spec: {
        hostUsers: false,
        containers: [{ name: 'app', image: 'nginx', securityContext: { procMount: 'Unmasked' } }],
      },
    } as KubeObject;
    const at = (version: string) =>
      evaluate(
        [policy([{ name: 'pss', podSecurity: { level: 'baseline', version } }])],
        request(userns),
      ).allowed;
    expect(at('v1.34')).toBe(false);
    expect(at('v1.35')).toBe(true);
    const custom = policy([{ name: 'pss', podSecurity: { level: 'baseline' }, message: 'no' }]);
    expect(evaluate([custom], request(pod)).decisions[0]?.causes).toEqual([
      { field: 'spec', message: 'Forbidden: no' },
    ]);
  });

  it('is refused with a path, beside another kind, or with a bad level or version', () => {
    const fault = (rule: object) => {
      try {
        policy([{ name: 'pss', ...rule }]);
        return '';
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(fault({ podSecurity: { level: 'baseline' }, path: '$.spec' })).toContain('set path, or');
    expect(fault({ podSecurity: { level: 'baseline' }, required: true })).toContain('exactly one');
    expect(fault({ podSecurity: { level: 'strict' } })).toContain('podSecurity.level');
    expect(fault({ podSecurity: { level: 'baseline', version: 'v1.05' } })).toContain('version');
  });

  it('stays on the webhook: the Pod Security Standards have no CEL form', () => {
    expect(compileToCel(baseline)).toMatchObject({
      reason: expect.stringContaining('the Pod Security Standards have no CEL form'),
    });
  });
});
