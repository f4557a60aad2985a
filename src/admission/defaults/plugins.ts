// What the built-in mutating admission plugins add to a Pod (admission.md §4.2), in their
// order: ServiceAccount → Priority → DefaultTolerationSeconds. Pods only, never templates.
import { randomInt } from 'node:crypto';
import { child, isUnset, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

export const SERVICE_ACCOUNT_MOUNT_PATH = '/var/run/secrets/kubernetes.io/serviceaccount';
const TOKEN_VOLUME_PREFIX = 'kube-api-access-';
/** WarnOnlyBoundTokenExpirationSeconds: one hour plus 7 s. */
const TOKEN_EXPIRATION_SECONDS = 3607;

/** utilrand.String's alphabet: no vowels, no confusable digits. */
const ALPHANUMS = 'bcdfghjklmnpqrstvwxz2456789';

/** Five random characters as the API server's name generator draws them. */
export function randomSuffix(): string {
  let s = '';
  for (let i = 0; i < 5; i += 1) s += ALPHANUMS[randomInt(ALPHANUMS.length)] ?? 'b';
  return s;
}

function tokenVolume(name: string): JsonObject {
  return {
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: TOKEN_EXPIRATION_SECONDS, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [
              {
                path: 'namespace',
                fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' },
              },
            ],
          },
        },
      ],
    },
  };
}

/**
 * ServiceAccount plugin: `serviceAccountName: default`, and unless automount is off, the
 * projected token volume mounted read-only in every (init) container that lacks the path.
 * Offline we cannot read the ServiceAccount, so its own automount setting counts as true.
 */
export function admitServiceAccount(spec: JsonObject, suffix: () => string): void {
  setDefault(spec, 'serviceAccountName', 'default');
  spec.serviceAccount = spec.serviceAccountName ?? 'default';
  if (spec.automountServiceAccountToken === false) return;
  const volumes = objectsIn(spec, 'volumes');
  const existing = volumes.find(
    (v) => typeof v.name === 'string' && v.name.startsWith(TOKEN_VOLUME_PREFIX),
  );
  const name = typeof existing?.name === 'string' ? existing.name : TOKEN_VOLUME_PREFIX + suffix();
  let needsVolume = false;
  for (const list of ['initContainers', 'containers']) {
    for (const container of objectsIn(spec, list)) {
      const mounts = objectsIn(container, 'volumeMounts');
      if (mounts.some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH)) continue;
      if (!Array.isArray(container.volumeMounts)) container.volumeMounts = [];
      container.volumeMounts.push({ mountPath: SERVICE_ACCOUNT_MOUNT_PATH, name, readOnly: true });
      needsVolume = true;
    }
  }
  if (!existing && needsVolume) {
    if (!Array.isArray(spec.volumes)) spec.volumes = [];
    spec.volumes.push(tokenVolume(name));
  }
}

/** The two built-in PriorityClasses; any other class's value is only known to the cluster. */
const systemPriorities: Record<string, number> = {
  'system-cluster-critical': 2000000000,
  'system-node-critical': 2000001000,
};

/**
 * Priority plugin: `priority: 0` when no class is named (no global default class offline),
 * the built-in system classes' values, and `preemptionPolicy: PreemptLowerPriority`.
 * A custom priorityClassName leaves `priority` unset: its value lives in the cluster.
 */
export function admitPriority(spec: JsonObject): void {
  const className = spec.priorityClassName;
  if (isUnset(className)) setDefault(spec, 'priority', 0);
  else if (typeof className === 'string' && className in systemPriorities) {
    setDefault(spec, 'priority', systemPriorities[className] ?? 0);
  }
  setDefault(spec, 'preemptionPolicy', 'PreemptLowerPriority');
}

/** DefaultTolerationSeconds: not-ready and unreachable NoExecute tolerations, 300 s each. */
export function admitDefaultTolerationSeconds(spec: JsonObject, seconds = 300): void {
  const tolerations = objectsIn(spec, 'tolerations');
  const covers = (key: string) =>
    tolerations.some(
      (t) => (t.key === key || isUnset(t.key)) && (t.effect === 'NoExecute' || isUnset(t.effect)),
    );
  const add: JsonObject[] = [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!covers(key)) {
      add.push({ effect: 'NoExecute', key, operator: 'Exists', tolerationSeconds: seconds });
    }
  }
  if (add.length === 0) return;
  if (!Array.isArray(spec.tolerations)) spec.tolerations = [];
  spec.tolerations.push(...add);
}

/** StorageObjectInUseProtection: the protection finalizer on PersistentVolume(Claim)s. */
export function admitStorageProtection(obj: JsonObject, finalizer: string): void {
  const meta = child(obj, 'metadata');
  const finalizers = Array.isArray(meta.finalizers) ? meta.finalizers : (meta.finalizers = []);
  if (!finalizers.includes(finalizer)) finalizers.push(finalizer);
}

/** The three plugins in admission order, on a Pod's spec. */
export function admitPodSpec(pod: JsonObject, suffix: () => string): void {
  const spec = child(pod, 'spec');
  admitServiceAccount(spec, suffix);
  admitPriority(spec);
  admitDefaultTolerationSeconds(spec);
}
