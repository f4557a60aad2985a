import { describe, expect, it } from 'vitest';
import { asCreated } from './as-created.js';
import { evaluatePodSecurity } from './index.js';

const KEY = 'container.apparmor.security.beta.kubernetes.io/';

describe('asCreated: a template as its Pods will be created', () => {
  it('copies containerPort into hostPort under hostNetwork only (SetDefaults_Pod)', () => {
    const ports = [{ containerPort: 80 }, { containerPort: 81, hostPort: 9000 }];
    const spec = { hostNetwork: true, containers: [{ name: 'c', ports }] };
    expect(asCreated({}, spec).containers![0]!.ports).toEqual([
      { containerPort: 80, hostPort: 80 },
      { containerPort: 81, hostPort: 9000 },
    ]);
    expect(spec.containers[0]!.ports[0]).toEqual({ containerPort: 80 }); // not changed
    const off = { containers: [{ name: 'c', ports }] };
    expect(asCreated({}, off).containers![0]!.ports).toBe(ports);
    // …which the baseline hostPorts check then sees.
    expect(
      evaluatePodSecurity('baseline', 'latest', {}, asCreated({}, spec)).map((v) => v.reason),
    ).toEqual(['host namespaces', 'hostPort']);
  });

  it('copies a deprecated AppArmor annotation into the field (applyAppArmorVersionSkew)', () => {
    const at = (annotation: string, extra: object = {}) =>
      asCreated(
        { annotations: { [KEY + 'c']: annotation } },
        { containers: [{ name: 'c' }], ...extra },
      ).containers![0]!.securityContext?.appArmorProfile;
    expect(at('unconfined')).toEqual({ type: 'Unconfined' });
    expect(at('runtime/default')).toEqual({ type: 'RuntimeDefault' });
    expect(at('localhost/p')).toEqual({ type: 'Localhost', localhostProfile: 'p' });
    for (const invalid of ['localhost/', 'localhost/ p', 'other'])
      expect(at(invalid)).toBeUndefined();
    // Equal to the pod's profile: not copied. Windows pods: never.
    const podProfile = { securityContext: { appArmorProfile: { type: 'Unconfined' } } };
    expect(at('unconfined', podProfile)).toBeUndefined();
    expect(at('unconfined', { os: { name: 'windows' } })).toBeUndefined();
  });

  it('keeps a container field that is already set', () => {
    const c = { name: 'c', securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } };
    const out = asCreated({ annotations: { [KEY + 'c']: 'unconfined' } }, { containers: [c] });
    expect(out.containers![0]).toBe(c);
  });
});
