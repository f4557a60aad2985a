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

/**
 * A container as a handler reads it: name and image are always strings ('' when absent).
 * It is the object's own container, seen through a view: a field set on it (`image`,
 * `securityContext`, …) is set in the request's object, so `mutate(req.object)` carries it.
 */
export interface Container {
  /** Its field path, as validation prints it: "spec.template.spec.containers[0]". Not a field of the object. */
  readonly path: string;
  name: string;
  image: string;
  [field: string]: unknown;
}

/**
 * The pod spec of a request's object (Pod, PodTemplate, workloads, Jobs, CronJobs), with
 * its field path and its containers, each with its own field path. All are live: a change
 * to `spec` or to a container lands in `req.object`.
 */
export function podSpecOfRequest(
  req: AdmissionRequest,
): (PodSpecAt & { containers: Container[] }) | undefined {
  const at = req.object ? podSpecOf(req.object, req.kind.group, req.kind.kind) : undefined;
  if (!at) return undefined;
  const list = Array.isArray(at.spec.containers) ? (at.spec.containers as unknown[]) : [];
  // An entry that is not an object has no fields to change: a detached {} stands in for it.
  const containers = list.map((c, i) =>
    liveContainer(isObject(c) ? c : {}, `${at.path}.containers[${i}]`),
  );
  return { ...at, containers };
}

/**
 * A view of `container` that reads name and image as strings and adds `path`, without
 * copying: a copy would let a handler's change be silently lost. Only reads are shaped;
 * every write (but to `path`, refused) goes to the container itself, and its keys are the
 * container's own, without `path`.
 */
function liveContainer(container: Record<string, unknown>, path: string): Container {
  const text = (v: unknown) => (typeof v === 'string' ? v : '');
  return new Proxy(container, {
    get(target, key, receiver) {
      if (key === 'path') return path;
      if (key === 'name' || key === 'image') return text(target[key]);
      return Reflect.get(target, key, receiver) as unknown;
    },
    set(target, key, value, receiver) {
      return key !== 'path' && Reflect.set(target, key, value, receiver);
    },
  }) as Container;
}

export function podSpecOf(obj: unknown, group: string, kind: string): PodSpecAt | undefined {
  const path = SPEC_PATHS[`${group}/${kind}`];
  if (!path) return undefined;
  let cur: unknown = obj;
  for (const k of path) cur = isObject(cur) ? cur[k] : undefined;
  return isObject(cur) ? { path: path.join('.'), spec: cur } : undefined;
}

/** A reference path's segments, split once: `volumes[].configMap.name`. */
type Segment = { key: string; list: boolean };
const segmentsOf = new Map<string, Segment[]>();

/**
 * Calls `visit` with every value at a reference path like `volumes[].configMap.name`
 * under `base`, in document order. `field()` gives the concrete field path Kubernetes
 * would print (`spec.volumes[0].configMap.name`): built only when asked, since a pod spec
 * with hundreds of env vars has hundreds of places to look and almost never a violation.
 */
export function eachValueAt(
  base: unknown,
  basePath: string,
  refPath: string,
  visit: (value: unknown, field: () => string) => void,
): void {
  let segments = segmentsOf.get(refPath);
  if (!segments) {
    segments = refPath.split('.').map((seg) => {
      const list = seg.endsWith('[]');
      return { key: list ? seg.slice(0, -2) : seg, list };
    });
    segmentsOf.set(refPath, segments);
  }
  const at: (string | number)[] = [];
  const field = () =>
    basePath + at.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
  const walk = (node: unknown, i: number): void => {
    const seg = (segments as Segment[])[i];
    if (!seg) return visit(node, field);
    if (!isObject(node) || node[seg.key] === undefined) return;
    const v = node[seg.key];
    at.push(seg.key);
    if (!seg.list) walk(v, i + 1);
    else if (Array.isArray(v)) {
      for (let n = 0; n < v.length; n++) {
        at.push(n);
        walk(v[n], i + 1);
        at.pop();
      }
    }
    at.pop();
  };
  walk(base, 0);
}
