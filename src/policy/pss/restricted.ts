// The restricted checks (pod-security-admission v0.37.2, policy/check_*.go). Several skip
// Windows pods from v1.25 and user-namespaced pods (`hostUsers: false`) from v1.35.
import { badSeccompSetters, validSeccomp } from './baseline.js';
import {
  allContainers,
  containersPhrase,
  inUserNamespace,
  isWindows,
  joinQuote,
  plural,
  sortedSet,
} from './text.js';
import type { CheckFn } from './types.js';

/** The same check, passing every pod `skip` selects (a later version's relaxation). */
export const unless =
  (skip: (spec: Parameters<CheckFn>[1]) => boolean, check: CheckFn): CheckFn =>
  (meta, spec) =>
    skip(spec) ? undefined : check(meta, spec);

export const allowPrivilegeEscalation: CheckFn = (_meta, spec) => {
  const bad = allContainers(spec)
    .filter((c) => c.securityContext?.allowPrivilegeEscalation !== false)
    .map((c) => c.name);
  if (!bad.length) return undefined;
  return {
    reason: 'allowPrivilegeEscalation != false',
    detail: `${containersPhrase(bad)} must set securityContext.allowPrivilegeEscalation=false`,
  };
};

export const capabilitiesRestricted: CheckFn = (_meta, spec) => {
  const missingDrop: string[] = [];
  const adding: string[] = [];
  const caps: string[] = [];
  for (const c of allContainers(spec)) {
    const capabilities = c.securityContext?.capabilities;
    if (!capabilities) {
      missingDrop.push(c.name);
      continue;
    }
    if (!(capabilities.drop ?? []).includes('ALL')) missingDrop.push(c.name);
    const added = (capabilities.add ?? []).filter((cap) => cap !== 'NET_BIND_SERVICE');
    if (added.length) adding.push(c.name);
    caps.push(...added);
  }
  const details = [
    ...(missingDrop.length
      ? [`${containersPhrase(missingDrop)} must set securityContext.capabilities.drop=["ALL"]`]
      : []),
    ...(adding.length
      ? [
          `${containersPhrase(adding)} must not include ${joinQuote(sortedSet(caps))} in securityContext.capabilities.add`,
        ]
      : []),
  ];
  return details.length
    ? { reason: 'unrestricted capabilities', detail: details.join('; ') }
    : undefined;
};

const ALLOWED_VOLUMES = [
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'image',
  'persistentVolumeClaim',
  'projected',
  'secret',
];
// In the order PodSecurity tests them: a volume is named by the first it sets.
const RESTRICTED_VOLUMES = [
  'hostPath',
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'gitRepo',
  'nfs',
  'iscsi',
  'glusterfs',
  'rbd',
  'flexVolume',
  'cinder',
  'cephfs',
  'flocker',
  'fc',
  'azureFile',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'portworxVolume',
  'scaleIO',
  'storageos',
];

export const restrictedVolumes: CheckFn = (_meta, spec) => {
  const bad: string[] = [];
  const types: string[] = [];
  for (const v of spec.volumes ?? []) {
    if (ALLOWED_VOLUMES.some((k) => v[k] != null)) continue;
    bad.push(v.name);
    types.push(RESTRICTED_VOLUMES.find((k) => v[k] != null) ?? 'unknown');
  }
  if (!bad.length) return undefined;
  const sorted = sortedSet(types);
  return {
    reason: 'restricted volume types',
    detail: `${plural('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${plural('uses', 'use', bad.length)} ${plural('restricted volume type', 'restricted volume types', sorted.length)} ${joinQuote(sorted)}`,
  };
};

export const runAsNonRoot: CheckFn = (_meta, spec) => {
  const setters: string[] = [];
  const podValue = spec.securityContext?.runAsNonRoot;
  if (podValue === false) setters.push('pod');
  const explicit: string[] = [];
  const implicit: string[] = [];
  for (const c of allContainers(spec)) {
    const v = c.securityContext?.runAsNonRoot;
    if (v != null) {
      if (!v) explicit.push(c.name);
    } else if (podValue !== true) implicit.push(c.name);
  }
  if (explicit.length) setters.push(containersPhrase(explicit));
  // An explicit false outranks a missing true: only one of the two is reported.
  if (setters.length)
    return {
      reason: 'runAsNonRoot != true',
      detail: `${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`,
    };
  if (implicit.length)
    return {
      reason: 'runAsNonRoot != true',
      detail: `pod or ${containersPhrase(implicit)} must set securityContext.runAsNonRoot=true`,
    };
  return undefined;
};

export const runAsUser: CheckFn = (_meta, spec) => {
  const setters: string[] = [];
  if (spec.securityContext?.runAsUser === 0) setters.push('pod');
  const bad = allContainers(spec)
    .filter((c) => c.securityContext?.runAsUser === 0)
    .map((c) => c.name);
  if (bad.length) setters.push(containersPhrase(bad));
  if (!setters.length) return undefined;
  return { reason: 'runAsUser=0', detail: `${setters.join(' and ')} must not set runAsUser=0` };
};

export const seccompRestricted: CheckFn = (_meta, spec) => {
  const explicit = badSeccompSetters(spec);
  if (explicit) return explicit;
  const podSet = validSeccomp(spec.securityContext?.seccompProfile?.type);
  const implicit = allContainers(spec)
    .filter((c) => !c.securityContext?.seccompProfile && !podSet)
    .map((c) => c.name);
  if (!implicit.length) return undefined;
  return {
    reason: 'seccompProfile',
    detail: `pod or ${containersPhrase(implicit)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`,
  };
};

export const notOnWindows = (check: CheckFn) => unless(isWindows, check);
export const notInUserNamespace = (check: CheckFn) => unless(inUserNamespace, check);
