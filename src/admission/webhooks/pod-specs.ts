// Where a PodSpec lives inside the built-in kinds, and how Kubernetes names its fields.
import type { AdmissionRequest } from '../review.js';
import { isObject } from '../../json.js';

export interface PodSpecAt {
  /** Field path as validation prints it: "spec", "spec.template.spec", ... */
  path: string;
  spec: Record<string, unknown>;
}

const TEMPLATE = ['spec', 'template', 'spec'];
const SPEC_PATHS: Record<string, string[]> = {
  '/Pod': ['spec'],
  '/PodTemplate': ['template', 'spec'],
  '/ReplicationController': TEMPLATE,
  'apps/Deployment': TEMPLATE,
  'apps/StatefulSet': TEMPLATE,
  'apps/DaemonSet': TEMPLATE,
  'apps/ReplicaSet': TEMPLATE,
  'batch/Job': TEMPLATE,
  'batch/CronJob': ['spec', 'jobTemplate', 'spec', 'template', 'spec'],
};

/** A container as a handler reads it: name and image are always strings ('' when absent). */
export interface Container {
  /** Its field path, as validation prints it: "spec.template.spec.containers[0]". */
  path: string;
  name: string;
  image: string;
  [field: string]: unknown;
}

/**
 * The pod spec of a request's object (Pod, PodTemplate, workloads, Jobs, CronJobs), with
 * its field path and its containers, each with its own field path.
 */
export function podSpecOfRequest(
  req: AdmissionRequest,
): (PodSpecAt & { containers: Container[] }) | undefined {
  const at = req.object ? podSpecOf(req.object, req.kind.group, req.kind.kind) : undefined;
  if (!at) return undefined;
  const list = Array.isArray(at.spec.containers) ? (at.spec.containers as unknown[]) : [];
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  const containers = list.map((c, i) => {
    const o = isObject(c) ? c : {};
    return { ...o, path: `${at.path}.containers[${i}]`, name: text(o.name), image: text(o.image) };
  });
  return { ...at, containers };
}

export function podSpecOf(obj: unknown, group: string, kind: string): PodSpecAt | undefined {
  const path = SPEC_PATHS[`${group}/${kind}`];
  if (!path) return undefined;
  let cur: unknown = obj;
  for (const k of path) cur = isObject(cur) ? cur[k] : undefined;
  return isObject(cur) ? { path: path.join('.'), spec: cur } : undefined;
}

/**
 * Every value at a reference path like `volumes[].configMap.name` under `base`, with the
 * concrete field path Kubernetes would print (`spec.volumes[0].configMap.name`).
 */
export function valuesAt(
  base: unknown,
  basePath: string,
  refPath: string,
): { field: string; value: unknown }[] {
  let found: { field: string; value: unknown }[] = [{ field: basePath, value: base }];
  for (const seg of refPath.split('.')) {
    const list = seg.endsWith('[]');
    const key = list ? seg.slice(0, -2) : seg;
    const next: { field: string; value: unknown }[] = [];
    for (const f of found) {
      if (!isObject(f.value) || f.value[key] === undefined) continue;
      const v = f.value[key];
      const field = `${f.field}.${key}`;
      if (!list) next.push({ field, value: v });
      else if (Array.isArray(v))
        v.forEach((item, i) => next.push({ field: `${field}[${i}]`, value: item }));
    }
    found = next;
  }
  return found;
}
