// A pod template as the Pods made from it will be when PodSecurity sees them: two steps the
// API server applies to Pods only (not to templates) change what the checks read.
// - SetDefaults_Pod: under hostNetwork, each containerPort is copied into hostPort (a host
//   port to the baseline check).
// - The Pod create strategy's applyAppArmorVersionSkew: a deprecated AppArmor annotation is
//   copied into the container's appArmorProfile field, unless invalid or equal to the pod's
//   (the check then names the container as well as the annotation).
// Copies; never changes the object.
import type { Container, PodMeta, PodSpec } from './types.js';

const APPARMOR_PREFIX = 'container.apparmor.security.beta.kubernetes.io/';

type Profile = { type: string; localhostProfile?: string };

/** podutil.ApparmorFieldForAnnotation, then dropped if ValidateAppArmorProfileField refuses it. */
function profileOf(annotation: string): Profile | undefined {
  if (annotation === 'unconfined') return { type: 'Unconfined' };
  if (annotation === 'runtime/default') return { type: 'RuntimeDefault' };
  if (!annotation.startsWith('localhost/')) return undefined;
  const name = annotation.slice('localhost/'.length);
  const valid = name !== '' && name.trim() === name && Buffer.byteLength(name) <= 4095;
  return valid ? { type: 'Localhost', localhostProfile: name } : undefined;
}

const same = (a: Profile, b: { type?: unknown; localhostProfile?: unknown } | null | undefined) =>
  !!b && a.type === b.type && (a.localhostProfile ?? null) === (b.localhostProfile ?? null);

export function asCreated(meta: PodMeta, spec: PodSpec): PodSpec {
  const annotations = meta.annotations ?? {};
  const windows = spec.os?.name === 'windows';
  const podProfile = spec.securityContext?.appArmorProfile;
  const container = (c: Container): Container => {
    let out = c;
    if (spec.hostNetwork === true && c.ports?.some((p) => p && !p.hostPort))
      out = {
        ...out,
        ports: c.ports.map((p) =>
          p && !p.hostPort
            ? { ...p, hostPort: (p as { containerPort?: number }).containerPort }
            : p,
        ),
      };
    const annotation = windows ? undefined : annotations[APPARMOR_PREFIX + c.name];
    if (annotation !== undefined && out.securityContext?.appArmorProfile == null) {
      const profile = profileOf(annotation);
      if (profile && !same(profile, podProfile))
        out = { ...out, securityContext: { ...out.securityContext, appArmorProfile: profile } };
    }
    return out;
  };
  return {
    ...spec,
    ...(spec.initContainers ? { initContainers: spec.initContainers.map(container) } : {}),
    ...(spec.containers ? { containers: spec.containers.map(container) } : {}),
  };
}
