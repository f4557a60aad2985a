// Fields the API server sets on create that are not defaults (strategy PrepareForCreate,
// BeforeCreate, registry allocation), for rendering a `--dry-run=server` result offline.
// Cluster-specific values annex cannot know (allocated clusterIP/nodePorts, resourceVersion,
// managedFields, which kubectl hides anyway) are left out.
import { randomUUID } from 'node:crypto';
import { quantityValue } from '../../apiserver/quantity.js';
import { child, isObject, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

export interface ServerFieldsOptions {
  /** creationTimestamp; default now; a string is printed as it is (a placeholder). */
  now?: Date | string;
  /**
   * Fill what the registry allocates (a Service's cluster IPs and node ports) with this
   * placeholder; by default those fields are left out.
   */
  allocated?: string;
  /** metadata.uid; default a random UUID; `false` leaves it out. */
  uid?: string | false;
  /** Namespace for namespaced kinds without one; default `default`. */
  namespace?: string;
  /** Cluster-scoped custom resources (`group/Kind`): they get no namespace. */
  clusterScoped?: ReadonlySet<string>;
}

const clusterScoped = new Set([
  '/Namespace',
  '/Node',
  '/PersistentVolume',
  '/ComponentStatus',
  'rbac.authorization.k8s.io/ClusterRole',
  'rbac.authorization.k8s.io/ClusterRoleBinding',
  'storage.k8s.io/StorageClass',
  'storage.k8s.io/CSIDriver',
  'storage.k8s.io/CSINode',
  'storage.k8s.io/VolumeAttachment',
  'scheduling.k8s.io/PriorityClass',
  'node.k8s.io/RuntimeClass',
  'networking.k8s.io/IngressClass',
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
  'admissionregistration.k8s.io/MutatingWebhookConfiguration',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
  'apiextensions.k8s.io/CustomResourceDefinition',
  'apiregistration.k8s.io/APIService',
  'certificates.k8s.io/CertificateSigningRequest',
]);

/**
 * Whether objects of this apiVersion/kind live outside namespaces: the built-in ones, and the
 * `group/Kind`s in `custom` (custom resources whose CRD says `scope: Cluster`); any other
 * kind is namespaced.
 */
export function isClusterScoped(
  apiVersion: string,
  kind: string,
  custom: ReadonlySet<string> = new Set(),
): boolean {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return clusterScoped.has(`${group}/${kind}`) || custom.has(`${group}/${kind}`);
}

/** The `group/Kind` of every cluster-scoped custom resource the CRDs among `objects` define. */
export function clusterScopedKindsOf(objects: readonly JsonObject[]): Set<string> {
  const kinds = new Set<string>();
  for (const o of objects) {
    if (o.kind !== 'CustomResourceDefinition' || !isObject(o.spec)) continue;
    const names = isObject(o.spec.names) ? o.spec.names : {};
    if (o.spec.scope === 'Cluster' && typeof names.kind === 'string') {
      kinds.add(`${String(o.spec.group)}/${names.kind}`);
    }
  }
  return kinds;
}

/** Kinds whose strategy sets `metadata.generation: 1` (custom resources do too). */
const withGeneration = new Set([
  '/Pod',
  '/ReplicationController',
  'apps/Deployment',
  'apps/ReplicaSet',
  'apps/StatefulSet',
  'apps/DaemonSet',
  'batch/Job',
  'batch/CronJob',
  'networking.k8s.io/Ingress',
  'networking.k8s.io/NetworkPolicy',
  'autoscaling/HorizontalPodAutoscaler',
  'policy/PodDisruptionBudget',
]);

/** Groups served by kube-apiserver itself; any other group is assumed to be a CRD. */
const builtinGroups = new Set([
  '',
  'apps',
  'batch',
  'autoscaling',
  'policy',
  'networking.k8s.io',
  'discovery.k8s.io',
  'rbac.authorization.k8s.io',
  'storage.k8s.io',
  'scheduling.k8s.io',
  'node.k8s.io',
  'coordination.k8s.io',
  'events.k8s.io',
  'certificates.k8s.io',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'resource.k8s.io',
]);

/** Go's metav1.Time in RFC 3339, seconds precision. */
function rfc3339(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}

/** GetPodQOS: BestEffort without cpu/memory requests or limits, Guaranteed when all equal. */
export function podQosClass(spec: JsonObject): 'BestEffort' | 'Burstable' | 'Guaranteed' {
  let any = false;
  let guaranteed = true;
  for (const list of ['initContainers', 'containers']) {
    for (const container of objectsIn(spec, list)) {
      const resources = maybeChild(container, 'resources') ?? {};
      const requests = maybeChild(resources, 'requests') ?? {};
      const limits = maybeChild(resources, 'limits') ?? {};
      for (const r of ['cpu', 'memory']) {
        const req = quantityValue(requests[r]);
        const lim = quantityValue(limits[r]);
        if ((req ?? 0) !== 0 || (lim ?? 0) !== 0) any = true;
        if (lim === undefined || lim === 0 || (req !== undefined && req !== lim)) {
          guaranteed = false;
        }
      }
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function jobSelector(obj: JsonObject, uid: string): void {
  const spec = child(obj, 'spec');
  if (spec.manualSelector === true) return;
  const name = maybeChild(obj, 'metadata')?.name;
  const labels = child(child(child(spec, 'template'), 'metadata'), 'labels');
  labels['batch.kubernetes.io/controller-uid'] = uid;
  if (typeof name === 'string') labels['batch.kubernetes.io/job-name'] = name;
  labels['controller-uid'] = uid;
  if (typeof name === 'string') labels['job-name'] = name;
  if (!isObject(spec.selector)) {
    spec.selector = { matchLabels: { 'batch.kubernetes.io/controller-uid': uid } };
  }
  // The Job's own labels default to its template's, the generated ones included.
  const meta = child(obj, 'metadata');
  if (!isObject(meta.labels) || Object.keys(meta.labels).length === 0) meta.labels = { ...labels };
}

/** The registry's allocations for a Service: cluster IPs and node ports, as placeholders. */
function serviceFields(obj: JsonObject, options: ServerFieldsOptions): void {
  const spec = child(obj, 'spec');
  const allocated = options.allocated;
  if (spec.type !== 'ExternalName') {
    if (allocated !== undefined && (isUnset(spec.clusterIP) || spec.clusterIP === '')) {
      spec.clusterIP = allocated;
    }
    if (typeof spec.clusterIP === 'string' && spec.clusterIP !== '') {
      setDefault(spec, 'clusterIPs', [spec.clusterIP]);
    }
    setDefault(spec, 'ipFamilies', ['IPv4']);
    setDefault(spec, 'ipFamilyPolicy', 'SingleStack');
  }
  const nodePorts =
    spec.type === 'NodePort' ||
    (spec.type === 'LoadBalancer' && spec.allocateLoadBalancerNodePorts !== false);
  if (allocated !== undefined && nodePorts) {
    for (const port of objectsIn(spec, 'ports')) {
      if (isUnset(port.nodePort) || port.nodePort === 0) port.nodePort = allocated;
    }
  }
  if (
    allocated !== undefined &&
    spec.type === 'LoadBalancer' &&
    spec.externalTrafficPolicy === 'Local' &&
    (isUnset(spec.healthCheckNodePort) || spec.healthCheckNodePort === 0)
  ) {
    spec.healthCheckNodePort = allocated;
  }
  child(child(obj, 'status'), 'loadBalancer');
}

/** Per kind: status and other fields the registry fills in on create. */
const statusOf: Record<string, (obj: JsonObject, options: ServerFieldsOptions) => void> = {
  '/Pod': (obj) => {
    const status = child(obj, 'status');
    setDefault(status, 'phase', 'Pending');
    setDefault(status, 'qosClass', podQosClass(child(obj, 'spec')));
  },
  '/Namespace': (obj) => {
    setDefault(child(obj, 'spec'), 'finalizers', ['kubernetes']);
    setDefault(child(obj, 'status'), 'phase', 'Active');
  },
  '/Service': serviceFields,
  '/ReplicationController': (obj) => setDefault(child(obj, 'status'), 'replicas', 0),
  'apps/ReplicaSet': (obj) => setDefault(child(obj, 'status'), 'replicas', 0),
  'apps/StatefulSet': (obj) => {
    const status = child(obj, 'status');
    setDefault(status, 'availableReplicas', 0);
    setDefault(status, 'replicas', 0);
  },
  'apps/DaemonSet': (obj) => {
    // The controller's revision marker, set by the strategy on create.
    const annotations = child(child(obj, 'metadata'), 'annotations');
    annotations['deprecated.daemonset.template.generation'] = '1';
    const status = child(obj, 'status');
    for (const k of [
      'currentNumberScheduled',
      'desiredNumberScheduled',
      'numberMisscheduled',
      'numberReady',
    ]) {
      setDefault(status, k, 0);
    }
  },
  // Their status structs are all-omitempty: they print as `status: {}`.
  'apps/Deployment': (obj) => void child(obj, 'status'),
  'batch/Job': (obj) => void child(obj, 'status'),
  'batch/CronJob': (obj) => void child(obj, 'status'),
  'networking.k8s.io/Ingress': (obj) => void child(child(obj, 'status'), 'loadBalancer'),
  'autoscaling/HorizontalPodAutoscaler': (obj) => {
    const status = child(obj, 'status');
    // v2's currentMetrics has no omitempty (null); v1 reports currentReplicas instead.
    if (String(obj.apiVersion) === 'autoscaling/v1') setDefault(status, 'currentReplicas', 0);
    else setDefault(status, 'currentMetrics', null);
    setDefault(status, 'desiredReplicas', 0);
  },
  'policy/PodDisruptionBudget': (obj) => {
    const status = child(obj, 'status');
    for (const k of ['currentHealthy', 'desiredHealthy', 'disruptionsAllowed', 'expectedPods']) {
      setDefault(status, k, 0);
    }
  },
};

/** Add the fields a create's response carries beyond defaults. Pure. */
export function applyServerFields<T>(obj: T, options: ServerFieldsOptions = {}): T {
  const out = structuredClone(obj);
  if (!isObject(out)) return out;
  const apiVersion = typeof out.apiVersion === 'string' ? out.apiVersion : '';
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const key = `${group}/${String(out.kind)}`;
  const meta = child(out, 'metadata');
  meta.creationTimestamp =
    typeof options.now === 'string' ? options.now : rfc3339(options.now ?? new Date());
  const uid = options.uid === undefined ? randomUUID() : options.uid;
  if (uid !== false) meta.uid = uid;
  if (withGeneration.has(key) || !builtinGroups.has(group)) meta.generation = 1;
  if (
    !isClusterScoped(apiVersion, String(out.kind), options.clusterScoped) &&
    isUnset(meta.namespace)
  ) {
    meta.namespace = options.namespace ?? 'default';
  }
  if (key === 'batch/Job' && uid !== false) jobSelector(out, uid);
  statusOf[key]?.(out, options);
  return out;
}
