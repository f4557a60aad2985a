// Scheme defaulting (+ optionally the built-in mutating admission plugins) for one object,
// dispatched on apiVersion/kind. Real clusters apply all of this before any webhook runs.
import {
  defaultNamespace,
  defaultPersistentVolume,
  defaultPersistentVolumeClaim,
  defaultSecret,
  defaultService,
} from './core.js';
import {
  defaultHorizontalPodAutoscaler,
  defaultNetworkPolicy,
  defaultPodDisruptionBudget,
  defaultRole,
  defaultRoleBinding,
} from './kinds.js';
import { defaultPodOnlyInPlace, defaultPodSpecInPlace } from './pod.js';
import {
  admitPodSpec,
  admitStorageProtection,
  randomSuffix as defaultRandomSuffix,
} from './plugins.js';
import { child, deepClone, isObject } from './util.js';
import type { JsonObject } from './util.js';
import {
  defaultCronJob,
  defaultDaemonSet,
  defaultDeployment,
  defaultJob,
  defaultReplicaSet,
  defaultReplicationController,
  defaultStatefulSet,
  defaultTemplateInPlace,
} from './workloads.js';

export interface ApplyDefaultsOptions {
  /**
   * Also apply the built-in mutating plugins: ServiceAccount, Priority and
   * DefaultTolerationSeconds (Pods), StorageObjectInUseProtection (PVs, PVCs). Default false.
   */
  admissionPlugins?: boolean;
  /** The 5-character suffix of `kube-api-access-<suffix>`; random by default. */
  randomSuffix?: () => string;
}

type Defaulter = (obj: JsonObject, options: ApplyDefaultsOptions) => void;

function defaultPod(obj: JsonObject, options: ApplyDefaultsOptions): void {
  const spec = child(obj, 'spec');
  defaultPodOnlyInPlace(spec);
  defaultPodSpecInPlace(spec);
  if (options.admissionPlugins === true) {
    admitPodSpec(obj, options.randomSuffix ?? defaultRandomSuffix);
  }
}

/** Keyed by `<group>/<Kind>`; only the versions the API server still serves matter. */
const defaulters: Record<string, Defaulter> = {
  '/Pod': defaultPod,
  '/PodTemplate': (obj) => defaultTemplateInPlace(child(obj, 'template')),
  '/ReplicationController': defaultReplicationController,
  '/Service': defaultService,
  '/Secret': defaultSecret,
  '/Namespace': defaultNamespace,
  '/PersistentVolume': (obj, options) => {
    defaultPersistentVolume(obj);
    if (options.admissionPlugins === true)
      admitStorageProtection(obj, 'kubernetes.io/pv-protection');
  },
  '/PersistentVolumeClaim': (obj, options) => {
    defaultPersistentVolumeClaim(obj);
    if (options.admissionPlugins === true)
      admitStorageProtection(obj, 'kubernetes.io/pvc-protection');
  },
  'apps/Deployment': defaultDeployment,
  'apps/StatefulSet': defaultStatefulSet,
  'apps/DaemonSet': defaultDaemonSet,
  'apps/ReplicaSet': defaultReplicaSet,
  'batch/Job': defaultJob,
  'batch/CronJob': defaultCronJob,
  'networking.k8s.io/NetworkPolicy': defaultNetworkPolicy,
  'autoscaling/HorizontalPodAutoscaler': defaultHorizontalPodAutoscaler,
  'policy/PodDisruptionBudget': defaultPodDisruptionBudget,
  'rbac.authorization.k8s.io/Role': defaultRole,
  'rbac.authorization.k8s.io/ClusterRole': defaultRole,
  'rbac.authorization.k8s.io/RoleBinding': defaultRoleBinding,
  'rbac.authorization.k8s.io/ClusterRoleBinding': defaultRoleBinding,
};

function groupOf(apiVersion: unknown): string {
  if (typeof apiVersion !== 'string') return '';
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Whether annex knows scheme defaults for this apiVersion/kind. */
export function hasDefaults(apiVersion: string, kind: string): boolean {
  return `${groupOf(apiVersion)}/${kind}` in defaulters;
}

/**
 * The object as the API server's defaulting (and optionally its built-in mutating admission
 * plugins) would leave it. Pure: the input is not modified. Kinds without defaults (ConfigMap,
 * custom resources…) come back as an equal copy.
 */
export function applyDefaults<T>(obj: T, options: ApplyDefaultsOptions = {}): T {
  const out = deepClone(obj);
  if (!isObject(out)) return out;
  const defaulter = defaulters[`${groupOf(out.apiVersion)}/${String(out.kind)}`];
  defaulter?.(out, options);
  return out;
}
