// The baseline checks (pod-security-admission v0.37.2, policy/check_*.go): each returns the
// reason and detail PodSecurity prints, or undefined when the pod passes.
import { allContainers, containersPhrase, goQuote, joinQuote, plural, sortedSet } from './text.js';
import type { CheckFn, Handler, PodMeta, PodSpec, Violation } from './types.js';

const APPARMOR_ANNOTATION = 'container.apparmor.security.beta.kubernetes.io/';

export const appArmorProfile: CheckFn = (meta, spec) => {
  const allowed = (t: unknown) => t === 'RuntimeDefault' || t === 'Localhost';
  const setters: string[] = [];
  const types: string[] = [];
  const podProfile = spec.securityContext?.appArmorProfile;
  if (podProfile && !allowed(podProfile.type)) {
    setters.push('pod');
    types.push(podProfile.type ?? '');
  }
  const bad: string[] = [];
  for (const c of allContainers(spec)) {
    const p = c.securityContext?.appArmorProfile;
    if (p && !allowed(p.type)) {
      bad.push(c.name);
      types.push(p.type ?? '');
    }
  }
  if (bad.length) setters.push(containersPhrase(bad));
  // The deprecated annotations: any key under the prefix, whether or not a container has that name.
  const annotations = Object.entries(meta.annotations ?? {})
    .filter(
      ([k, v]) =>
        k.startsWith(APPARMOR_ANNOTATION) &&
        !(v === '' || v === 'runtime/default' || v.startsWith('localhost/')),
    )
    .map(([k, v]) => `${k}=${goQuote(v)}`);
  const values = [...sortedSet(types), ...sortedSet(annotations)];
  if (annotations.length) setters.push(plural('annotation', 'annotations', annotations.length));
  if (!setters.length) return undefined;
  return {
    reason: plural('forbidden AppArmor profile', 'forbidden AppArmor profiles', values.length),
    detail: `${setters.join(' and ')} must not set AppArmor profile type to ${joinQuote(values)}`,
  };
};

const DEFAULT_CAPABILITIES = new Set([
  'AUDIT_WRITE',
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'FSETID',
  'KILL',
  'MKNOD',
  'NET_BIND_SERVICE',
  'SETFCAP',
  'SETGID',
  'SETPCAP',
  'SETUID',
  'SYS_CHROOT',
]);

export const capabilitiesBaseline: CheckFn = (_meta, spec) => {
  const bad: string[] = [];
  const caps: string[] = [];
  for (const c of allContainers(spec)) {
    const added = (c.securityContext?.capabilities?.add ?? []).filter(
      (cap) => !DEFAULT_CAPABILITIES.has(cap),
    );
    if (added.length) bad.push(c.name);
    caps.push(...added);
  }
  if (!bad.length) return undefined;
  return {
    reason: 'non-default capabilities',
    detail: `${containersPhrase(bad)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`,
  };
};

export const hostNamespaces: CheckFn = (_meta, spec) => {
  const set = [
    spec.hostNetwork && 'hostNetwork=true',
    spec.hostPID && 'hostPID=true',
    spec.hostIPC && 'hostIPC=true',
  ].filter((s): s is string => typeof s === 'string');
  return set.length ? { reason: 'host namespaces', detail: set.join(', ') } : undefined;
};

export const hostPathVolumes: CheckFn = (_meta, spec) => {
  const bad = (spec.volumes ?? []).filter((v) => v.hostPath != null).map((v) => v.name);
  if (!bad.length) return undefined;
  return {
    reason: 'hostPath volumes',
    detail: `${plural('volume', 'volumes', bad.length)} ${joinQuote(bad)}`,
  };
};

export const hostPorts: CheckFn = (_meta, spec) => {
  const bad: string[] = [];
  const ports: string[] = [];
  for (const c of allContainers(spec)) {
    const used = (c.ports ?? []).map((p) => p.hostPort ?? 0).filter((p) => p !== 0);
    if (used.length) bad.push(c.name);
    ports.push(...used.map(String));
  }
  if (!bad.length) return undefined;
  // Ports are sorted as strings ("10000" before "80"), as Go's string set does.
  const sorted = sortedSet(ports);
  return {
    reason: 'hostPort',
    detail: `${containersPhrase(bad)} ${plural('uses', 'use', bad.length)} ${plural('hostPort', 'hostPorts', sorted.length)} ${sorted.join(', ')}`,
  };
};

const handlerHosts = (h: Handler | null | undefined): string[] =>
  h ? [h.httpGet?.host, h.tcpSocket?.host].filter((x): x is string => !!x) : [];

/** From v1.34: probes and lifecycle handlers must not name a host. */
export const hostProbesAndHostLifecycle: CheckFn = (_meta, spec) => {
  const bad: string[] = [];
  const hosts: string[] = [];
  for (const c of allContainers(spec)) {
    const found = [c.livenessProbe, c.readinessProbe, c.startupProbe]
      .concat([c.lifecycle?.postStart, c.lifecycle?.preStop])
      .flatMap(handlerHosts);
    if (found.length) bad.push(c.name);
    hosts.push(...found);
  }
  if (!bad.length) return undefined;
  // Unlike the other checks, containers are a sorted set here.
  const names = sortedSet(bad);
  const sorted = sortedSet(hosts);
  return {
    reason: 'probe or lifecycle host',
    detail: `${containersPhrase(names)} ${plural('uses', 'use', names.length)} ${plural('probe or lifecycle host', 'probe or lifecycle hosts', sorted.length)} ${joinQuote(sorted)}`,
  };
};

export const privileged: CheckFn = (_meta, spec) => {
  const bad = allContainers(spec)
    .filter((c) => c.securityContext?.privileged === true)
    .map((c) => c.name);
  if (!bad.length) return undefined;
  return {
    reason: 'privileged',
    detail: `${containersPhrase(bad)} must not set securityContext.privileged=true`,
  };
};

/** Shared by baseline (relaxed for user-namespaced pods from v1.35) and restricted (never relaxed). */
export const procMount: CheckFn = (_meta, spec) => {
  const bad: string[] = [];
  const types: string[] = [];
  for (const c of allContainers(spec)) {
    const pm = c.securityContext?.procMount;
    if (pm != null && pm !== 'Default') {
      bad.push(c.name);
      types.push(pm);
    }
  }
  if (!bad.length) return undefined;
  return {
    reason: 'procMount',
    detail: `${containersPhrase(bad)} must not set securityContext.procMount to ${joinQuote(sortedSet(types))}`,
  };
};

const SELINUX_TYPES_1_0 = ['', 'container_t', 'container_init_t', 'container_kvm_t'];
const SELINUX_TYPES_1_31 = [...SELINUX_TYPES_1_0, 'container_engine_t'];

const seLinuxOptions =
  (allowedTypes: readonly string[]): CheckFn =>
  (_meta, spec) => {
    const types: string[] = [];
    let user = false;
    let role = false;
    const valid = (o: { type?: string | null; user?: string | null; role?: string | null }) => {
      const t = o.type ?? '';
      const typeOk = allowedTypes.includes(t);
      if (!typeOk) types.push(t);
      if (o.user) user = true;
      if (o.role) role = true;
      return typeOk && !o.user && !o.role;
    };
    const setters: string[] = [];
    const podOpts = spec.securityContext?.seLinuxOptions;
    if (podOpts && !valid(podOpts)) setters.push('pod');
    const bad = allContainers(spec)
      .filter((c) => {
        const o = c.securityContext?.seLinuxOptions;
        return o ? !valid(o) : false;
      })
      .map((c) => c.name);
    if (bad.length) setters.push(containersPhrase(bad));
    if (!setters.length) return undefined;
    const sorted = sortedSet(types);
    const data = [
      ...(sorted.length ? [`${plural('type', 'types', sorted.length)} ${joinQuote(sorted)}`] : []),
      ...(user ? ['user may not be set'] : []),
      ...(role ? ['role may not be set'] : []),
    ];
    return {
      reason: 'seLinuxOptions',
      detail: `${setters.join(' and ')} set forbidden securityContext.seLinuxOptions: ${data.join('; ')}`,
    };
  };
export const seLinuxOptions1_0 = seLinuxOptions(SELINUX_TYPES_1_0);
export const seLinuxOptions1_31 = seLinuxOptions(SELINUX_TYPES_1_31);

const SECCOMP_POD_ANNOTATION = 'seccomp.security.alpha.kubernetes.io/pod';
const SECCOMP_CONTAINER_ANNOTATION = 'container.seccomp.security.alpha.kubernetes.io/';

/** Before v1.19 only the (since removed) alpha annotations carried seccomp profiles. */
export const seccompBaseline1_0: CheckFn = (meta, spec) => {
  const annotations = meta.annotations ?? {};
  const validValue = (v: string) =>
    v === 'runtime/default' || v === 'docker/default' || v.startsWith('localhost/');
  const forbidden: string[] = [];
  const keys = [
    SECCOMP_POD_ANNOTATION,
    ...allContainers(spec).map((c) => SECCOMP_CONTAINER_ANNOTATION + c.name),
  ];
  for (const k of keys) {
    const v = Object.hasOwn(annotations, k) ? annotations[k] : undefined;
    if (v !== undefined && !validValue(v)) forbidden.push(`${k}=${goQuote(v)}`);
  }
  if (!forbidden.length) return undefined;
  const sorted = sortedSet(forbidden);
  return {
    reason: 'seccompProfile',
    detail: `forbidden ${plural('annotation', 'annotations', sorted.length)} ${sorted.join(', ')}`,
  };
};

export const validSeccomp = (t: unknown): boolean => t === 'RuntimeDefault' || t === 'Localhost';

/** Explicitly bad seccomp types at pod and container level (baseline and restricted share it). */
export function badSeccompSetters(spec: PodSpec): Violation | undefined {
  const setters: string[] = [];
  const types: string[] = [];
  const podProfile = spec.securityContext?.seccompProfile;
  if (podProfile && !validSeccomp(podProfile.type)) {
    setters.push('pod');
    types.push(podProfile.type ?? '');
  }
  const bad: string[] = [];
  for (const c of allContainers(spec)) {
    const p = c.securityContext?.seccompProfile;
    if (p && !validSeccomp(p.type)) {
      bad.push(c.name);
      types.push(p.type ?? '');
    }
  }
  if (bad.length) setters.push(containersPhrase(bad));
  if (!setters.length) return undefined;
  return {
    reason: 'seccompProfile',
    detail: `${setters.join(' and ')} must not set securityContext.seccompProfile.type to ${joinQuote(sortedSet(types))}`,
  };
}

export const seccompBaseline1_19: CheckFn = (_meta, spec) => badSeccompSetters(spec);

const SYSCTLS_1_0 = [
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
];
const SYSCTLS_1_27 = [...SYSCTLS_1_0, 'net.ipv4.ip_local_reserved_ports'];
const SYSCTLS_1_29 = [
  ...SYSCTLS_1_27,
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
];
const SYSCTLS_1_32 = [...SYSCTLS_1_29, 'net.ipv4.tcp_rmem', 'net.ipv4.tcp_wmem'];
const SYSCTLS_1_37 = [
  ...SYSCTLS_1_32,
  'net.ipv4.tcp_slow_start_after_idle',
  'net.ipv4.tcp_notsent_lowat',
];

const sysctls =
  (safe: readonly string[]): CheckFn =>
  (_meta, spec) => {
    // Listed in the pod's order, repeats kept.
    const bad = (spec.securityContext?.sysctls ?? [])
      .map((s) => s.name)
      .filter((n) => !safe.includes(n));
    return bad.length ? { reason: 'forbidden sysctls', detail: bad.join(', ') } : undefined;
  };
export const sysctls1_0 = sysctls(SYSCTLS_1_0);
export const sysctls1_27 = sysctls(SYSCTLS_1_27);
export const sysctls1_29 = sysctls(SYSCTLS_1_29);
export const sysctls1_32 = sysctls(SYSCTLS_1_32);
export const sysctls1_37 = sysctls(SYSCTLS_1_37);

export const windowsHostProcess: CheckFn = (_meta, spec) => {
  const setters: string[] = [];
  if (spec.securityContext?.windowsOptions?.hostProcess === true) setters.push('pod');
  const bad = allContainers(spec)
    .filter((c) => c.securityContext?.windowsOptions?.hostProcess === true)
    .map((c) => c.name);
  if (bad.length) setters.push(containersPhrase(bad));
  if (!setters.length) return undefined;
  return {
    reason: 'hostProcess',
    detail: `${setters.join(' and ')} must not set securityContext.windowsOptions.hostProcess=true`,
  };
};

export type { PodMeta };
