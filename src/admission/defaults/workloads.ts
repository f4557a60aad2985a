// Workload spec defaults (pkg/apis/apps/v1, pkg/apis/batch/v1 defaults.go) plus their pod
// templates. Each function mutates the object it is given (callers pass a clone).
import { defaultPodSpecInPlace } from './pod.js';
import { defaultPvcSpec } from './volumes.js';
import { child, isObject, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

/** Template defaults in place: `metadata: {}` always prints, the spec gets PodSpec defaults. */
export function defaultTemplateInPlace(template: JsonObject): void {
  child(template, 'metadata');
  defaultPodSpecInPlace(child(template, 'spec'));
}

function templateOf(spec: JsonObject): JsonObject {
  const template = child(spec, 'template');
  defaultTemplateInPlace(template);
  return template;
}

function templateLabels(spec: JsonObject): JsonObject | undefined {
  const labels = maybeChild(maybeChild(spec, 'template') ?? {}, 'metadata');
  const l = labels && maybeChild(labels, 'labels');
  return l && Object.keys(l).length > 0 ? l : undefined;
}

export function defaultDeployment(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'replicas', 1);
  const strategy = child(spec, 'strategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rolling = child(strategy, 'rollingUpdate');
    setDefault(rolling, 'maxUnavailable', '25%');
    setDefault(rolling, 'maxSurge', '25%');
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  setDefault(spec, 'progressDeadlineSeconds', 600);
  templateOf(spec);
}

export function defaultStatefulSet(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'podManagementPolicy', 'OrderedReady');
  // Only a strategy without a type gets `rollingUpdate: {}`; an explicit RollingUpdate
  // without it stays bare (measured on v1.37.2). Then partition 0 and, with the
  // MaxUnavailableStatefulSet gate on by default, maxUnavailable 1.
  const strategy = child(spec, 'updateStrategy');
  if (isUnset(strategy.type)) {
    strategy.type = 'RollingUpdate';
    child(strategy, 'rollingUpdate');
  }
  const rolling = maybeChild(strategy, 'rollingUpdate');
  if (strategy.type === 'RollingUpdate' && rolling) {
    setDefault(rolling, 'partition', 0);
    setDefault(rolling, 'maxUnavailable', 1);
  }
  setDefault(spec, 'replicas', 1);
  setDefault(spec, 'revisionHistoryLimit', 10);
  const retention = child(spec, 'persistentVolumeClaimRetentionPolicy');
  setDefault(retention, 'whenDeleted', 'Retain');
  setDefault(retention, 'whenScaled', 'Retain');
  for (const claim of objectsIn(spec, 'volumeClaimTemplates')) {
    // Claim templates are whole PersistentVolumeClaims: the API server fills in their type.
    setDefault(claim, 'apiVersion', 'v1');
    setDefault(claim, 'kind', 'PersistentVolumeClaim');
    defaultPvcSpec(child(claim, 'spec'));
    setDefault(child(claim, 'status'), 'phase', 'Pending');
  }
  templateOf(spec);
}

export function defaultDaemonSet(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  const strategy = child(spec, 'updateStrategy');
  setDefault(strategy, 'type', 'RollingUpdate');
  if (strategy.type === 'RollingUpdate') {
    const rolling = child(strategy, 'rollingUpdate');
    setDefault(rolling, 'maxUnavailable', 1);
    // maxSurge 0 is a real value here (intstr), not "unset".
    if (rolling.maxSurge === undefined || rolling.maxSurge === null) rolling.maxSurge = 0;
  }
  setDefault(spec, 'revisionHistoryLimit', 10);
  templateOf(spec);
}

export function defaultReplicaSet(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'replicas', 1);
  templateOf(spec);
}

export function defaultReplicationController(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  const labels = templateLabels(spec);
  if (labels) {
    if (!isObject(spec.selector) || Object.keys(spec.selector).length === 0) {
      spec.selector = { ...labels };
    }
    const meta = child(obj, 'metadata');
    if (!isObject(meta.labels) || Object.keys(meta.labels).length === 0) {
      meta.labels = { ...labels };
    }
  }
  setDefault(spec, 'replicas', 1);
  if (isObject(spec.template)) templateOf(spec);
}

/** Job spec defaults (SetDefaults_Job): only for Job objects, not CronJob's jobTemplate. */
export function defaultJob(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  if (isUnset(spec.completions) && isUnset(spec.parallelism)) {
    spec.completions = 1;
    spec.parallelism = 1;
  }
  setDefault(spec, 'parallelism', 1);
  // With backoffLimitPerIndex the global limit defaults to MaxInt32.
  setDefault(spec, 'backoffLimit', isUnset(spec.backoffLimitPerIndex) ? 6 : 2147483647);
  const labels = templateLabels(spec);
  const meta = child(obj, 'metadata');
  if (labels && (!isObject(meta.labels) || Object.keys(meta.labels).length === 0)) {
    meta.labels = { ...labels };
  }
  setDefault(spec, 'completionMode', 'NonIndexed');
  setDefault(spec, 'suspend', false);
  setDefault(
    spec,
    'podReplacementPolicy',
    isUnset(spec.podFailurePolicy) ? 'TerminatingOrFailed' : 'Failed',
  );
  setDefault(spec, 'manualSelector', false);
  templateOf(spec);
}

export function defaultCronJob(obj: JsonObject): void {
  const spec = child(obj, 'spec');
  setDefault(spec, 'concurrencyPolicy', 'Allow');
  setDefault(spec, 'suspend', false);
  setDefault(spec, 'successfulJobsHistoryLimit', 3);
  setDefault(spec, 'failedJobsHistoryLimit', 1);
  const jobTemplate = child(spec, 'jobTemplate');
  child(jobTemplate, 'metadata'); // ObjectMeta is a struct: `metadata: {}`
  templateOf(child(jobTemplate, 'spec'));
}
