// Cases derived from the check semantics of pod-security-admission v0.37.2: which checks run
// at which version, their order, and the exact reason/detail wording.
import { describe, expect, it } from 'vitest';
import { checksFor, evaluatePodSecurity, podSecurityMessage, policyMinor } from './index.js';
import type { PodSpec } from './types.js';

const c = (name: string, securityContext: object = {}, extra: object = {}) => ({
  name,
  securityContext,
  ...extra,
});
const good = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ['ALL'] },
  runAsNonRoot: true,
  seccompProfile: { type: 'RuntimeDefault' },
};
const msg = (level: 'baseline' | 'restricted', version: string, spec: PodSpec, annotations = {}) =>
  podSecurityMessage(level, version, evaluatePodSecurity(level, version, { annotations }, spec));

describe('the check registry', () => {
  it('orders baseline IDs then restricted IDs, each in byte order, with overrides removed', () => {
    expect(checksFor('restricted', 37).map((x) => x.id)).toEqual([
      'appArmorProfile',
      'hostNamespaces',
      'hostPorts',
      'hostProbesAndHostLifecycle',
      'privileged',
      'seLinuxOptions',
      'sysctls',
      'windowsHostProcess',
      'allowPrivilegeEscalation',
      'capabilities_restricted',
      'procMount_restricted',
      'restrictedVolumes',
      'runAsNonRoot',
      'runAsUser',
      'seccompProfile_restricted',
    ]);
    expect(checksFor('baseline', 33).map((x) => x.id)).not.toContain('hostProbesAndHostLifecycle');
    expect(checksFor('restricted', 18).map((x) => x.id)).toContain('seccompProfile_baseline');
    expect(checksFor('restricted', 21).map((x) => x.id)).toContain('capabilities_baseline');
    expect(checksFor('privileged', 37)).toEqual([]);
  });
  it('reads versions as the namespace label spells them; later minors evaluate as the newest', () => {
    expect(policyMinor('latest')).toBe(37);
    expect(policyMinor('v1.99')).toBe(37);
    expect(policyMinor('v1.0')).toBe(0);
    expect(policyMinor('v1.05')).toBeUndefined();
    expect(policyMinor('v2.1')).toBeUndefined();
  });
});

describe('restricted', () => {
  it('reports a bare pod', () => {
    expect(msg('restricted', 'latest', { containers: [c('app')] })).toBe(
      'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
    );
  });
  it('admits a compliant pod, and visits init, regular then ephemeral containers', () => {
    expect(evaluatePodSecurity('restricted', 'latest', {}, { containers: [c('a', good)] })).toEqual(
      [],
    );
    const spec: PodSpec = {
      containers: [c('b', { ...good, capabilities: { add: ['NET_RAW', 'CHOWN'] } })],
      initContainers: [c('a', { ...good, capabilities: { add: ['NET_BIND_SERVICE'] } })],
      ephemeralContainers: [c('e', { ...good, capabilities: { drop: ['ALL'], add: ['BPF'] } })],
    };
    expect(evaluatePodSecurity('restricted', 'latest', {}, spec)).toEqual([
      {
        reason: 'unrestricted capabilities',
        detail:
          'containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "b", "e" must not include "BPF", "CHOWN", "NET_RAW" in securityContext.capabilities.add',
      },
    ]);
  });
  it('skips Windows pods for privilege escalation, capabilities and seccomp from v1.25', () => {
    const spec: PodSpec = {
      os: { name: 'windows' },
      securityContext: { runAsNonRoot: true },
      containers: [c('w')],
    };
    expect(evaluatePodSecurity('restricted', 'v1.25', {}, spec)).toEqual([]);
    expect(evaluatePodSecurity('restricted', 'v1.24', {}, spec).map((v) => v.reason)).toEqual([
      'allowPrivilegeEscalation != false',
      'unrestricted capabilities',
      'seccompProfile',
    ]);
  });
  it('relaxes runAsNonRoot, runAsUser and baseline procMount for user namespaces from v1.35', () => {
    const spec: PodSpec = {
      hostUsers: false,
      securityContext: { runAsUser: 0, runAsNonRoot: false },
      containers: [c('a', { ...good, runAsNonRoot: false, procMount: 'Unmasked' })],
    };
    expect(evaluatePodSecurity('baseline', 'v1.35', {}, spec)).toEqual([]);
    expect(msg('restricted', 'v1.35', spec)).toBe(
      'violates PodSecurity "restricted:v1.35": procMount (container "a" must not set securityContext.procMount to "Unmasked")',
    );
    expect(msg('restricted', 'v1.34', spec)).toBe(
      'violates PodSecurity "restricted:v1.34": procMount (container "a" must not set securityContext.procMount to "Unmasked"), runAsNonRoot != true (pod and container "a" must not set securityContext.runAsNonRoot=false), runAsUser=0 (pod must not set runAsUser=0)',
    );
  });
  it('names restricted volume types by the first source set, in the order the pod lists volumes', () => {
    const spec: PodSpec = {
      containers: [c('a', good)],
      volumes: [
        { name: 'z', nfs: {} },
        { name: 'ok', emptyDir: {} },
        { name: 'h', hostPath: { path: '/' } },
        { name: 'u', somethingNew: {} },
      ],
    };
    expect(evaluatePodSecurity('restricted', 'latest', {}, spec)).toEqual([
      {
        reason: 'restricted volume types',
        detail: 'volumes "z", "h", "u" use restricted volume types "hostPath", "nfs", "unknown"',
      },
    ]);
    expect(evaluatePodSecurity('baseline', 'latest', {}, spec)).toEqual([
      { reason: 'hostPath volumes', detail: 'volume "h"' },
    ]);
  });
  it('reports explicit seccomp types before missing ones', () => {
    const spec: PodSpec = {
      securityContext: { seccompProfile: { type: 'Unconfined' } },
      containers: [
        c('a', { ...good, seccompProfile: undefined }),
        c('b', { ...good, seccompProfile: { type: 'Unconfined' } }),
      ],
    };
    expect(evaluatePodSecurity('restricted', 'latest', {}, spec)).toEqual([
      {
        reason: 'seccompProfile',
        detail:
          'pod and container "b" must not set securityContext.seccompProfile.type to "Unconfined"',
      },
    ]);
  });
});

describe('baseline', () => {
  it('joins every failing check with its detail', () => {
    const spec: PodSpec = {
      hostNetwork: true,
      hostIPC: true,
      securityContext: {
        sysctls: [{ name: 'kernel.msgmax' }, { name: 'net.ipv4.tcp_rmem' }],
        seLinuxOptions: { type: 'spc_t', user: 'u' },
        windowsOptions: { hostProcess: true },
      },
      containers: [
        c(
          'a',
          { privileged: true, procMount: 'Unmasked' },
          { ports: [{ hostPort: 8080 }, { hostPort: 10000 }] },
        ),
        c(
          'b',
          { capabilities: { add: ['NET_RAW', 'CHOWN'] } },
          {
            livenessProbe: { httpGet: { host: 'example.com' } },
            lifecycle: { preStop: { tcpSocket: { host: '10.0.0.1' } } },
          },
        ),
      ],
    };
    expect(msg('baseline', 'v1.31', spec)).toBe(
      'violates PodSecurity "baseline:v1.31": non-default capabilities (container "b" must not include "NET_RAW" in securityContext.capabilities.add), host namespaces (hostNetwork=true, hostIPC=true), hostPort (container "a" uses hostPorts 10000, 8080), privileged (container "a" must not set securityContext.privileged=true), procMount (container "a" must not set securityContext.procMount to "Unmasked"), seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "spc_t"; user may not be set), forbidden sysctls (kernel.msgmax, net.ipv4.tcp_rmem), hostProcess (pod must not set securityContext.windowsOptions.hostProcess=true)',
    );
    expect(msg('baseline', 'latest', spec)).toContain(
      'probe or lifecycle host (container "b" uses probe or lifecycle hosts "10.0.0.1", "example.com")',
    );
    expect(msg('baseline', 'latest', spec)).toContain('forbidden sysctls (kernel.msgmax),');
  });
  it('allows container_engine_t from v1.31', () => {
    const spec: PodSpec = {
      containers: [c('a', { seLinuxOptions: { type: 'container_engine_t' } })],
    };
    expect(evaluatePodSecurity('baseline', 'v1.31', {}, spec)).toEqual([]);
    expect(evaluatePodSecurity('baseline', 'v1.30', {}, spec)).toEqual([
      {
        reason: 'seLinuxOptions',
        detail:
          'container "a" set forbidden securityContext.seLinuxOptions: type "container_engine_t"',
      },
    ]);
  });
  it('reads AppArmor from fields and the deprecated annotations', () => {
    const spec: PodSpec = {
      securityContext: { appArmorProfile: { type: 'Unconfined' } },
      containers: [c('a', { appArmorProfile: { type: 'Localhost' } })],
    };
    const annotations = {
      'container.apparmor.security.beta.kubernetes.io/a': 'unconfined',
      'container.apparmor.security.beta.kubernetes.io/b': 'localhost/x',
    };
    expect(evaluatePodSecurity('baseline', 'latest', { annotations }, spec)).toEqual([
      {
        reason: 'forbidden AppArmor profiles',
        detail:
          'pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined""',
      },
    ]);
  });
  it('reads seccomp annotations before v1.19 and fields from it', () => {
    const annotations = {
      'seccomp.security.alpha.kubernetes.io/pod': 'unconfined',
      'container.seccomp.security.alpha.kubernetes.io/a': 'docker/default',
    };
    const spec: PodSpec = { containers: [c('a', { seccompProfile: { type: 'Unconfined' } })] };
    expect(evaluatePodSecurity('baseline', 'v1.18', { annotations }, spec)).toEqual([
      {
        reason: 'seccompProfile',
        detail: 'forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined"',
      },
    ]);
    expect(evaluatePodSecurity('baseline', 'v1.19', { annotations }, spec)).toEqual([
      {
        reason: 'seccompProfile',
        detail: 'container "a" must not set securityContext.seccompProfile.type to "Unconfined"',
      },
    ]);
  });
  it('grows the safe sysctls by version', () => {
    const spec = (name: string): PodSpec => ({
      securityContext: { sysctls: [{ name }] },
      containers: [c('a')],
    });
    const allowedFrom = (name: string) =>
      [0, 26, 27, 28, 29, 31, 32, 36, 37].find(
        (m) => evaluatePodSecurity('baseline', `v1.${m}`, {}, spec(name)).length === 0,
      );
    expect(allowedFrom('net.ipv4.ip_local_port_range')).toBe(0);
    expect(allowedFrom('net.ipv4.ip_local_reserved_ports')).toBe(27);
    expect(allowedFrom('net.ipv4.tcp_fin_timeout')).toBe(29);
    expect(allowedFrom('net.ipv4.tcp_wmem')).toBe(32);
    expect(allowedFrom('net.ipv4.tcp_notsent_lowat')).toBe(37);
    expect(allowedFrom('kernel.msgmax')).toBeUndefined();
  });
});
