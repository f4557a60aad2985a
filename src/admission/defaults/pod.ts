// SetDefaults_PodSpec (Pods and pod templates) and SetDefaults_Pod (Pods only).
import { defaultContainer } from './container.js';
import { defaultVolume } from './volumes.js';
import { child, deepClone, isObject, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

const containerLists = ['initContainers', 'containers', 'ephemeralContainers'] as const;

/** Defaults shared by Pods and pod templates. Mutates `spec`. */
export function defaultPodSpecInPlace(spec: JsonObject): void {
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'schedulerName', 'default-scheduler');
  if (!isObject(spec.securityContext)) spec.securityContext = {};
  // v1 ⇄ internal conversion keeps the deprecated serviceAccount equal to serviceAccountName.
  if (isUnset(spec.serviceAccountName) && !isUnset(spec.serviceAccount)) {
    spec.serviceAccountName = spec.serviceAccount ?? '';
  }
  if (!isUnset(spec.serviceAccountName)) spec.serviceAccount = spec.serviceAccountName ?? '';
  for (const list of containerLists) {
    for (const container of objectsIn(spec, list)) defaultContainer(container);
  }
  for (const volume of objectsIn(spec, 'volumes')) defaultVolume(volume);
}

/** Pod-only defaults: requests copied from limits, enableServiceLinks, host-network ports. */
export function defaultPodOnlyInPlace(spec: JsonObject): void {
  for (const list of ['initContainers', 'containers'] as const) {
    for (const container of objectsIn(spec, list)) {
      const resources = child(container, 'resources');
      const limits = maybeChild(resources, 'limits');
      if (!limits || Object.keys(limits).length === 0) continue;
      const requests = child(resources, 'requests');
      for (const [k, v] of Object.entries(limits)) {
        if (isUnset(requests[k])) requests[k] = v;
      }
    }
  }
  setDefault(spec, 'enableServiceLinks', true);
  if (spec.hostNetwork === true) {
    for (const list of containerLists) {
      for (const container of objectsIn(spec, list)) {
        for (const port of objectsIn(container, 'ports')) {
          if (isUnset(port.hostPort) || port.hostPort === 0)
            port.hostPort = port.containerPort ?? 0;
        }
      }
    }
  }
}

/**
 * The API server's defaults for a pod template (`{metadata, spec}`), as applied inside
 * Deployments and the other workloads. Also usable on custom resources' templates. Pure.
 */
export function defaultPodTemplateSpec<T>(template: T): T {
  const out = deepClone(template);
  if (!isObject(out)) return out;
  // ObjectMeta is a Go struct: an empty template metadata still prints as `metadata: {}`.
  child(out, 'metadata');
  defaultPodSpecInPlace(child(out, 'spec'));
  return out;
}
