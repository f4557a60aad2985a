// `match: { kinds: [...] }`: the resources of the built-in kinds a webhook most often
// matches, so a declaration can name kinds and still render exact webhook rules.
import type { RuleWithOperations } from './webhook.js';

/** Kind → [group, version, plural]. */
export const BUILT_IN_KINDS: Readonly<Record<string, [string, string, string]>> = {
  Pod: ['', 'v1', 'pods'],
  Service: ['', 'v1', 'services'],
  ConfigMap: ['', 'v1', 'configmaps'],
  Secret: ['', 'v1', 'secrets'],
  Namespace: ['', 'v1', 'namespaces'],
  ServiceAccount: ['', 'v1', 'serviceaccounts'],
  PersistentVolumeClaim: ['', 'v1', 'persistentvolumeclaims'],
  PodTemplate: ['', 'v1', 'podtemplates'],
  ReplicationController: ['', 'v1', 'replicationcontrollers'],
  Deployment: ['apps', 'v1', 'deployments'],
  StatefulSet: ['apps', 'v1', 'statefulsets'],
  DaemonSet: ['apps', 'v1', 'daemonsets'],
  ReplicaSet: ['apps', 'v1', 'replicasets'],
  Job: ['batch', 'v1', 'jobs'],
  CronJob: ['batch', 'v1', 'cronjobs'],
  Ingress: ['networking.k8s.io', 'v1', 'ingresses'],
  NetworkPolicy: ['networking.k8s.io', 'v1', 'networkpolicies'],
};

/** One rule per group/version, listing the kinds' resources ("Pod", "apps/Deployment"). */
export function rulesForKinds(
  kinds: readonly string[],
  operations: RuleWithOperations['operations'],
): RuleWithOperations[] {
  const byGv = new Map<string, RuleWithOperations>();
  for (const k of kinds) {
    const slash = k.lastIndexOf('/');
    const kind = k.slice(slash + 1);
    const known = Object.hasOwn(BUILT_IN_KINDS, kind) ? BUILT_IN_KINDS[kind] : undefined;
    if (!known || (slash >= 0 && k.slice(0, slash) !== known[0])) {
      throw new TypeError(
        `match.kinds: ${JSON.stringify(k)} is not a built-in kind annex knows; write rules (apiGroups, apiVersions, resources) for it`,
      );
    }
    const [group, version, plural] = known;
    const gv = `${group}/${version}`;
    const rule = byGv.get(gv) ?? {
      operations,
      apiGroups: [group],
      apiVersions: [version],
      resources: [],
    };
    if (!rule.resources.includes(plural)) rule.resources.push(plural);
    byGv.set(gv, rule);
  }
  return [...byGv.values()];
}
