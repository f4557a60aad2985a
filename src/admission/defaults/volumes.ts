// SetDefaults_Volume and the per-source defaults (pkg/apis/core/v1/defaults.go).
import { defaultFieldRef, defaultPullPolicy } from './container.js';
import { child, isUnset, maybeChild, objectsIn, setDefault } from './util.js';
import type { JsonObject } from './util.js';

const DEFAULT_MODE = 420; // 0644

/** The keys of a Volume that are not a volume source. */
const notSources = new Set(['name']);

/** PVC spec defaults, shared with ephemeral volumes and StatefulSet claim templates. */
export function defaultPvcSpec(spec: JsonObject | undefined): void {
  if (spec) setDefault(spec, 'volumeMode', 'Filesystem');
}

function defaultDownwardItems(source: JsonObject | undefined): void {
  for (const item of objectsIn(source, 'items')) defaultFieldRef(item);
}

export function defaultVolume(volume: JsonObject): void {
  const hasSource = Object.entries(volume).some(([k, v]) => !notSources.has(k) && !isUnset(v));
  if (!hasSource) volume.emptyDir = {};
  for (const key of ['secret', 'configMap', 'downwardAPI', 'projected']) {
    const source = maybeChild(volume, key);
    if (source) setDefault(source, 'defaultMode', DEFAULT_MODE);
  }
  defaultDownwardItems(maybeChild(volume, 'downwardAPI'));
  const hostPath = maybeChild(volume, 'hostPath');
  if (hostPath) setDefault(hostPath, 'type', '');
  for (const source of objectsIn(maybeChild(volume, 'projected'), 'sources')) {
    const token = maybeChild(source, 'serviceAccountToken');
    if (token) setDefault(token, 'expirationSeconds', 3600);
    defaultDownwardItems(maybeChild(source, 'downwardAPI'));
  }
  const template = maybeChild(maybeChild(volume, 'ephemeral') ?? {}, 'volumeClaimTemplate');
  if (template) child(template, 'metadata'); // ObjectMeta is a struct: `metadata: {}`
  defaultPvcSpec(template && maybeChild(template, 'spec'));
  const image = maybeChild(volume, 'image');
  if (image) setDefault(image, 'pullPolicy', defaultPullPolicy(image.reference));
}
