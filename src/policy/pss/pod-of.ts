// Where an object keeps the pod PodSecurity evaluates: a Pod itself, or the pod template of
// the workload kinds PodSecurity's DefaultPodSpecExtractor knows. Other objects, and a
// workload without a template, have none (PodSecurity skips them).
import type { PodMeta, PodSpec } from './types.js';
import { asCreated } from './as-created.js';

export interface PodOf {
  meta: PodMeta;
  spec: PodSpec;
  /** The pod spec's field path in the object: `spec`, `spec.template.spec`… */
  field: string;
}

const TEMPLATE_PATHS: Record<string, string[]> = {
  Pod: [],
  PodTemplate: ['template'],
  ReplicationController: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  Deployment: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export function podOf(obj: unknown): PodOf | undefined {
  if (!isRecord(obj) || typeof obj.kind !== 'string') return undefined;
  const path = TEMPLATE_PATHS[obj.kind];
  if (!path) return undefined;
  let at: unknown = obj;
  for (const k of path) at = isRecord(at) ? at[k] : undefined;
  if (!isRecord(at)) return undefined;
  const meta = isRecord(at.metadata) ? (at.metadata as PodMeta) : {};
  const spec = isRecord(at.spec) ? (at.spec as PodSpec) : {};
  // A Pod arrives as created; a template is what every Pod made from it will be created from.
  const pod = path.length > 0 ? asCreated(meta, spec) : spec;
  return { meta, spec: pod, field: [...path, 'spec'].join('.') };
}
