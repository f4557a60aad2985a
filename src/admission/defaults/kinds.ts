// Defaults of the other built-in kinds the corpus covers (networking, autoscaling, policy,
// rbac defaults.go and the Go structs' zero values that print), measured on v1.37.2.
import { child, isObject, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { Json, JsonObject } from './util.js';

export function defaultNetworkPolicy(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  for (const rule of [...objectsIn(spec, 'ingress'), ...objectsIn(spec, 'egress')]) {
    for (const port of objectsIn(rule, 'ports')) setDefault(port, 'protocol', 'TCP');
  }
  if (!Array.isArray(spec.policyTypes) || spec.policyTypes.length === 0) {
    const types: Json[] = ['Ingress'];
    if (Array.isArray(spec.egress)) types.push('Egress');
    spec.policyTypes = types;
  }
}

const policy = (type: string, value: number, periodSeconds: number): JsonObject => ({
  type,
  value,
  periodSeconds,
});

/** GenerateHPAScaleUpRules / GenerateHPAScaleDownRules: fill what a given rule lacks. */
function defaultScalingRules(behavior: JsonObject, key: 'scaleUp' | 'scaleDown'): void {
  const rules = child(behavior, key);
  const up = key === 'scaleUp';
  setDefault(rules, 'stabilizationWindowSeconds', up ? 0 : 300);
  setDefault(rules, 'selectPolicy', 'Max');
  if (!Array.isArray(rules.policies) || rules.policies.length === 0) {
    rules.policies = up
      ? [policy('Pods', 4, 15), policy('Percent', 100, 15)]
      : [policy('Percent', 100, 15)];
  }
}

export function defaultHorizontalPodAutoscaler(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'minReplicas', 1);
  if (String(obj.apiVersion) === 'autoscaling/v1') {
    setDefault(spec, 'targetCPUUtilizationPercentage', 80);
    return;
  }
  if (!Array.isArray(spec.metrics) || spec.metrics.length === 0) {
    spec.metrics = [
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
      },
    ];
  }
  const behavior = maybeChild(spec, 'behavior');
  if (behavior) {
    defaultScalingRules(behavior, 'scaleUp');
    defaultScalingRules(behavior, 'scaleDown');
  }
}

/** PodDisruptionBudgetSpec is a struct: an object without one still prints `spec: {}`. */
export function defaultPodDisruptionBudget(obj: JsonObject): void {
  child(obj, 'spec');
}

/** Role and ClusterRole `rules` have no omitempty: absent prints as null. */
export function defaultRole(obj: JsonObject): void {
  if (isUnset(obj.rules)) obj.rules = null;
}

/** Users and Groups are rbac.authorization.k8s.io subjects; ServiceAccounts stay in core. */
export function defaultRoleBinding(obj: JsonObject): void {
  for (const subject of objectsIn(obj, 'subjects')) {
    if (subject.kind === 'User' || subject.kind === 'Group') {
      setDefault(subject, 'apiGroup', 'rbac.authorization.k8s.io');
    }
  }
}

/** stringData is write-only: merged into data as base64 (it wins), then dropped. */
export function defaultSecretData(obj: JsonObject): void {
  const stringData = obj.stringData;
  if (!isObject(stringData)) return;
  const data = child(obj, 'data');
  for (const [k, v] of Object.entries(stringData)) {
    data[k] = Buffer.from(typeof v === 'string' ? v : String(v), 'utf8').toString('base64');
  }
  delete obj.stringData;
}
