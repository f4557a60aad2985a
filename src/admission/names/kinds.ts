// Which name rule each built-in kind's strategy validation applies (admission.md §3), and which
// rule a reference to a kind must satisfy. Unknown kinds are custom resources: subdomain.
import type { NameRule } from './rules.js';

export interface KindNameRule {
  rule: NameRule;
  /** An extra length limit checked on create only (CronJob: 52 = 63 - 11). */
  maxLength?: number;
  /** Since 1.27 the API server warns (not denies) when this kind's name is not a DNS label. */
  warnsIfNotLabel?: 'pod' | 'workload';
  /**
   * How `metadata.generateName` is judged, besides the generated name (measured on v1.37.2):
   * `prefix` (the default) with the rule's prefix form (trailing-dash masking; for path
   * segments only `/` and `%`); `name` as if it were a name (RBAC's minimalNameRequirements
   * ignores the prefix flag, so `.` and `..` are refused); `ignored`: only the generated name
   * is checked (ReplicationController, validated declaratively). Whatever the mode, a create
   * that passes the kind's validation then gets the generic path-segment check of both.
   */
  generateName?: 'prefix' | 'name' | 'ignored';
  /**
   * The name is copied into a label the API server validates as a label value: the field its
   * errors are reported at, and whether a generated name is checked too.
   */
  nameLabel?: { field: string; generated: boolean };
  /** Declaratively validated kinds say `must be no more than 253 bytes`. */
  lengthUnit?: 'characters' | 'bytes';
}

const subdomain: KindNameRule = { rule: 'dns1123-subdomain' };
const pathSegment: KindNameRule = { rule: 'path-segment' };
const rbac: KindNameRule = { rule: 'path-segment', generateName: 'name' };

/** Keyed by `<group>/<Kind>`, the core group being ''. */
const table: Record<string, KindNameRule> = {
  '/Pod': { rule: 'dns1123-subdomain', warnsIfNotLabel: 'pod' },
  '/ConfigMap': subdomain,
  '/Secret': subdomain,
  '/ServiceAccount': subdomain,
  // DNS-1035 until 1.33; RFC 1123 label once RelaxedServiceNameValidation is on (default
  // in the pinned v1.37.2, as the differential test against the real API server shows).
  '/Service': { rule: 'dns1123-label' },
  // kubernetes.io/metadata.name=<name> is set before validation, not for generated names.
  '/Namespace': {
    rule: 'dns1123-label',
    nameLabel: { field: 'metadata.labels', generated: false },
  },
  '/Node': subdomain,
  '/Endpoints': subdomain,
  '/LimitRange': subdomain,
  '/ResourceQuota': subdomain,
  '/PersistentVolume': subdomain,
  '/PersistentVolumeClaim': subdomain,
  '/ReplicationController': {
    rule: 'dns1123-subdomain',
    warnsIfNotLabel: 'workload',
    generateName: 'ignored',
    lengthUnit: 'bytes',
  },
  '/PodTemplate': subdomain,
  '/Event': pathSegment,
  'apps/Deployment': { rule: 'dns1123-subdomain', warnsIfNotLabel: 'workload' },
  'apps/ReplicaSet': { rule: 'dns1123-subdomain', warnsIfNotLabel: 'workload' },
  'apps/DaemonSet': subdomain,
  'apps/ControllerRevision': subdomain,
  'apps/StatefulSet': { rule: 'dns1123-label' },
  // The job-name labels of the pod template carry the (generated) name.
  'batch/Job': {
    rule: 'dns1123-subdomain',
    warnsIfNotLabel: 'workload',
    nameLabel: { field: 'spec.template.labels', generated: true },
  },
  'batch/CronJob': { rule: 'dns1123-subdomain', maxLength: 52, warnsIfNotLabel: 'workload' },
  'autoscaling/HorizontalPodAutoscaler': subdomain,
  'networking.k8s.io/Ingress': subdomain,
  'networking.k8s.io/IngressClass': subdomain,
  'networking.k8s.io/NetworkPolicy': subdomain,
  'discovery.k8s.io/EndpointSlice': subdomain,
  'policy/PodDisruptionBudget': pathSegment,
  'rbac.authorization.k8s.io/Role': rbac,
  'rbac.authorization.k8s.io/ClusterRole': rbac,
  'rbac.authorization.k8s.io/RoleBinding': rbac,
  'rbac.authorization.k8s.io/ClusterRoleBinding': rbac,
  'certificates.k8s.io/CertificateSigningRequest': pathSegment,
  'events.k8s.io/Event': subdomain,
  'storage.k8s.io/StorageClass': subdomain,
  'storage.k8s.io/CSIDriver': subdomain,
  'storage.k8s.io/VolumeAttachment': subdomain,
  'scheduling.k8s.io/PriorityClass': subdomain,
  'node.k8s.io/RuntimeClass': subdomain,
  'coordination.k8s.io/Lease': subdomain,
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': subdomain,
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': subdomain,
  'apiextensions.k8s.io/CustomResourceDefinition': subdomain,
};

/** The group of an apiVersion: `apps/v1` → `apps`, `v1` → ''. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** The name rule of a kind; unknown kinds are treated as custom resources (subdomain). */
export function ruleForKind(group: string, kind: string): KindNameRule {
  return table[`${group}/${kind}`] ?? subdomain;
}

/** Whether `group/kind` is a built-in kind listed in the table. */
export function isKnownKind(group: string, kind: string): boolean {
  return `${group}/${kind}` in table;
}

/** A place inside a pod spec that names another object, and the kind it names. */
export interface ReferenceRule {
  /** Path relative to a PodSpec; `[]` stands for every list element. */
  path: string;
  group: string;
  kind: string;
}

/** Names referenced from a PodSpec must satisfy the rule of the kind they name. */
export const podSpecReferences: readonly ReferenceRule[] = [
  { path: 'serviceAccountName', group: '', kind: 'ServiceAccount' },
  { path: 'imagePullSecrets[].name', group: '', kind: 'Secret' },
  { path: 'volumes[].configMap.name', group: '', kind: 'ConfigMap' },
  { path: 'volumes[].secret.secretName', group: '', kind: 'Secret' },
  { path: 'volumes[].persistentVolumeClaim.claimName', group: '', kind: 'PersistentVolumeClaim' },
  { path: 'volumes[].projected.sources[].configMap.name', group: '', kind: 'ConfigMap' },
  { path: 'volumes[].projected.sources[].secret.name', group: '', kind: 'Secret' },
  ...['containers', 'initContainers', 'ephemeralContainers'].flatMap((c) => [
    { path: `${c}[].env[].valueFrom.configMapKeyRef.name`, group: '', kind: 'ConfigMap' },
    { path: `${c}[].env[].valueFrom.secretKeyRef.name`, group: '', kind: 'Secret' },
    { path: `${c}[].envFrom[].configMapRef.name`, group: '', kind: 'ConfigMap' },
    { path: `${c}[].envFrom[].secretRef.name`, group: '', kind: 'Secret' },
  ]),
  { path: 'priorityClassName', group: 'scheduling.k8s.io', kind: 'PriorityClass' },
  { path: 'runtimeClassName', group: 'node.k8s.io', kind: 'RuntimeClass' },
  { path: 'nodeName', group: '', kind: 'Node' },
];

/** The rule a reference to `kind` must satisfy: the rule of the kind it names. */
export function ruleForReference(ref: ReferenceRule): NameRule {
  return ruleForKind(ref.group, ref.kind).rule;
}
