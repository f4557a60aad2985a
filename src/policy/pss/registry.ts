// Which check runs at which policy version, and in what order (policy/registry.go): a check
// has versions, each active from its minimum minor until the next; a restricted check may
// override (replace) a baseline one; the results are ordered baseline IDs then restricted
// IDs, each sorted in byte order.
import * as b from './baseline.js';
import * as r from './restricted.js';
import type { CheckFn, Level, PodMeta, PodSpec, PolicyVersion, Violation } from './types.js';

interface Check {
  id: string;
  level: 'baseline' | 'restricted';
  /** [minimum minor, check, baseline checks it overrides], by increasing minor. */
  versions: [number, CheckFn, string[]?][];
}

const CHECKS: Check[] = [
  { id: 'appArmorProfile', level: 'baseline', versions: [[0, b.appArmorProfile]] },
  { id: 'capabilities_baseline', level: 'baseline', versions: [[0, b.capabilitiesBaseline]] },
  { id: 'hostNamespaces', level: 'baseline', versions: [[0, b.hostNamespaces]] },
  { id: 'hostPathVolumes', level: 'baseline', versions: [[0, b.hostPathVolumes]] },
  { id: 'hostPorts', level: 'baseline', versions: [[0, b.hostPorts]] },
  {
    id: 'hostProbesAndHostLifecycle',
    level: 'baseline',
    versions: [[34, b.hostProbesAndHostLifecycle]],
  },
  { id: 'privileged', level: 'baseline', versions: [[0, b.privileged]] },
  {
    id: 'procMount',
    level: 'baseline',
    versions: [
      [0, b.procMount],
      [35, r.notInUserNamespace(b.procMount)],
    ],
  },
  {
    id: 'seLinuxOptions',
    level: 'baseline',
    versions: [
      [0, b.seLinuxOptions1_0],
      [31, b.seLinuxOptions1_31],
    ],
  },
  {
    id: 'seccompProfile_baseline',
    level: 'baseline',
    versions: [
      [0, b.seccompBaseline1_0],
      [19, b.seccompBaseline1_19],
    ],
  },
  {
    id: 'sysctls',
    level: 'baseline',
    versions: [
      [0, b.sysctls1_0],
      [27, b.sysctls1_27],
      [29, b.sysctls1_29],
      [32, b.sysctls1_32],
      [37, b.sysctls1_37],
    ],
  },
  { id: 'windowsHostProcess', level: 'baseline', versions: [[0, b.windowsHostProcess]] },
  {
    id: 'allowPrivilegeEscalation',
    level: 'restricted',
    versions: [
      [8, r.allowPrivilegeEscalation],
      [25, r.notOnWindows(r.allowPrivilegeEscalation)],
    ],
  },
  {
    id: 'capabilities_restricted',
    level: 'restricted',
    versions: [
      [22, r.capabilitiesRestricted, ['capabilities_baseline']],
      [25, r.notOnWindows(r.capabilitiesRestricted), ['capabilities_baseline']],
    ],
  },
  {
    id: 'procMount_restricted',
    level: 'restricted',
    versions: [[35, b.procMount, ['procMount']]],
  },
  {
    id: 'restrictedVolumes',
    level: 'restricted',
    versions: [[0, r.restrictedVolumes, ['hostPathVolumes']]],
  },
  {
    id: 'runAsNonRoot',
    level: 'restricted',
    versions: [
      [0, r.runAsNonRoot],
      [35, r.notInUserNamespace(r.runAsNonRoot)],
    ],
  },
  {
    id: 'runAsUser',
    level: 'restricted',
    versions: [
      [23, r.runAsUser],
      [35, r.notInUserNamespace(r.runAsUser)],
    ],
  },
  {
    id: 'seccompProfile_restricted',
    level: 'restricted',
    versions: [
      [19, r.seccompRestricted, ['seccompProfile_baseline']],
      [25, r.notOnWindows(r.seccompRestricted), ['seccompProfile_baseline']],
    ],
  },
];

const byteOrder = (a: string, c: string) => (a < c ? -1 : a > c ? 1 : 0);
const ORDERED = [
  ...CHECKS.filter((c) => c.level === 'baseline').sort((x, y) => byteOrder(x.id, y.id)),
  ...CHECKS.filter((c) => c.level === 'restricted').sort((x, y) => byteOrder(x.id, y.id)),
];

/** The newest minor any check names; later versions (and `latest`) evaluate as this one. */
export const MAX_MINOR = Math.max(...CHECKS.flatMap((c) => c.versions.map(([v]) => v)));

/** The minor a version label evaluates as, or undefined when the label is not `latest`/`v1.N`. */
export function policyMinor(version: PolicyVersion): number | undefined {
  if (version === 'latest') return MAX_MINOR;
  const m = /^v1\.(0|[1-9][0-9]*)$/.exec(version);
  return m ? Math.min(Number(m[1]), MAX_MINOR) : undefined;
}

/** The checks (id and function) a level runs at a minor, in PodSecurity's order. */
export function checksFor(level: Level, minor: number): { id: string; check: CheckFn }[] {
  if (level === 'privileged') return [];
  const active = ORDERED.flatMap((c) => {
    if (level === 'baseline' && c.level !== 'baseline') return [];
    const at = c.versions.filter(([min]) => min <= minor).at(-1);
    return at ? [{ id: c.id, check: at[1], overrides: at[2] ?? [] }] : [];
  });
  const overridden = new Set(active.flatMap((c) => c.overrides));
  return active.filter((c) => !overridden.has(c.id)).map(({ id, check }) => ({ id, check }));
}

/** Every violation of the level at the version, in the order PodSecurity reports them. */
export function evaluatePodSecurity(
  level: Level,
  version: PolicyVersion,
  podMeta: PodMeta,
  podSpec: PodSpec,
): Violation[] {
  const minor = policyMinor(version);
  if (minor === undefined) throw new Error(`version ${version}: must be "latest" or "v1.x"`);
  return checksFor(level, minor).flatMap(({ check }) => check(podMeta, podSpec) ?? []);
}

/** `<reason> (<detail>), <reason>, …`: details in parentheses when non-empty. */
export const renderViolations = (violations: readonly Violation[]): string =>
  violations.map((v) => (v.detail ? `${v.reason} (${v.detail})` : v.reason)).join(', ');

/** The enforce error's text: `violates PodSecurity "restricted:latest": …`. */
export const podSecurityMessage = (
  level: Level,
  version: PolicyVersion,
  violations: readonly Violation[],
): string => `violates PodSecurity "${level}:${version}": ${renderViolations(violations)}`;
