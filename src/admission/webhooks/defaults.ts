// Mutating webhook "defaults".
// - Built-in kinds already carry the API server's defaults when they reach a webhook,
//   so for them annex adds only organisation defaults: container resource requests and
//   app.kubernetes.io/managed-by, each where absent and each configurable.
// - Custom resources get no built-in defaulting, so annex applies the API server's own
//   pod-template defaults to every pod template embedded in them (then the same
//   organisation defaults), making a CR's template look like a Deployment's.
import type { KubeObject } from '../../core/types.js';
import type { DefaultsConfig } from '../config.js';
import { defaultPodTemplateSpec } from '../defaults/index.js';
import type { AdmissionRequest } from '../review.js';
import { typeErrorBody } from '../names/index.js';
import { allow, denyInvalid, type Verdict } from '../verdict.js';
import { mutatingWebhook, type Webhook } from '../webhook.js';
import { podSpecOf, type PodSpecAt } from './pod-specs.js';
import { isObject } from '../../json.js';

export const MANAGED_BY = 'app.kubernetes.io/managed-by';
const BUILT_IN_GROUPS = new Set(['', 'apps', 'batch']);

type Settings = DefaultsConfig;
type Obj = Record<string, unknown>;

export function defaultsWebhook(settings: Settings): Webhook {
  const create = ['CREATE' as const];
  return mutatingWebhook({
    name: 'defaults.annex.dev',
    description:
      "Organisation defaults (resource requests, app.kubernetes.io/managed-by) on Pods and\nworkloads, and the API server's own pod-template defaults on custom resources that\nopt in with the label annex.dev/pod-defaults=enabled (CRDs get no built-in defaulting).",
    rules: [
      { operations: create, apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
      {
        operations: create,
        apiGroups: ['apps'],
        apiVersions: ['v1'],
        resources: ['deployments', 'statefulsets', 'daemonsets', 'replicasets'],
      },
      {
        operations: create,
        apiGroups: ['batch'],
        apiVersions: ['v1'],
        resources: ['jobs', 'cronjobs'],
      },
    ],
    failurePolicy: 'Fail',
    timeoutSeconds: 5,
    reinvocationPolicy: 'Never',
    also: [
      {
        name: 'custom-resource-defaults.annex.dev',
        rules: [
          {
            operations: ['CREATE', 'UPDATE'],
            apiGroups: ['*'],
            apiVersions: ['*'],
            resources: ['*'],
            scope: 'Namespaced',
          },
        ],
        objectSelector: { matchLabels: { 'annex.dev/pod-defaults': 'enabled' } },
        failurePolicy: 'Ignore',
        timeoutSeconds: 5,
      },
    ],
    admit: (req) => applyAnnexDefaults(req, settings),
  });
}

export function applyAnnexDefaults(req: AdmissionRequest, s: Settings): Verdict {
  if (!req.object || (req.operation !== 'CREATE' && req.operation !== 'UPDATE')) return allow();
  // Depth is bounded where the review is parsed (review.ts tooDeep), so this cannot overflow.
  // The server hands a mutating webhook its own copy of the object (admission/server.ts).
  const obj = req.object as Obj;
  const { group, kind } = req.kind;

  const podSpecs: PodSpecAt[] = [];
  if (BUILT_IN_GROUPS.has(group)) {
    const at = podSpecOf(obj, group, kind);
    if (at) podSpecs.push(at);
  } else if (s.podTemplates) {
    podSpecs.push(...replacePodTemplates(obj));
  }

  if (req.operation === 'CREATE' && s.managedBy) {
    const wrong = addManagedBy(obj, s.managedBy);
    if (wrong) return denyInvalid(req, nameOf(req), [wrong]);
  }
  // Say what was added, so the user sees it in kubectl ("Warning: ...") at once.
  const warnings = podSpecs.flatMap((at) => addRequests(at, s.requests));
  return { allowed: true, object: obj as KubeObject, ...(warnings.length ? { warnings } : {}) };
}

/**
 * The managed-by label where absent, adding labels and metadata as needed (null counts
 * as absent, as in Go). A metadata or labels that is not a map is the cause returned.
 */
function addManagedBy(obj: Obj, value: string): { field: string; message: string } | undefined {
  obj.metadata ??= {};
  const meta = obj.metadata;
  if (!isObject(meta)) return typeError('metadata', meta, 'object');
  meta.labels ??= {};
  const labels = meta.labels;
  if (!isObject(labels)) return typeError('metadata.labels', labels, 'object');
  if (labels[MANAGED_BY] === undefined) labels[MANAGED_BY] = value;
  return undefined;
}

const typeError = (field: string, value: unknown, expected: string) => ({
  field,
  message: typeErrorBody(field, value, expected),
});

/** The object's name for a denial, where it is a string. */
function nameOf(req: AdmissionRequest): string {
  const meta: unknown = req.object?.metadata;
  return req.name || (isObject(meta) && typeof meta.name === 'string' ? meta.name : '');
}

/** Container requests where a container sets none for that resource; one warning per container. */
function addRequests(at: PodSpecAt, requests: Settings['requests']): string[] {
  const warnings: string[] = [];
  for (const list of ['containers', 'initContainers']) {
    const containers = at.spec[list];
    if (!Array.isArray(containers)) continue;
    containers.forEach((c: unknown, i) => {
      if (!isObject(c)) return;
      const resources: Obj = isObject(c.resources) ? c.resources : {};
      const req = isObject(resources.requests) ? resources.requests : {};
      // Kubernetes copies limits into missing requests; an explicit limit wins over ours.
      const limits = isObject(resources.limits) ? resources.limits : {};
      const added: string[] = [];
      for (const [name, value] of Object.entries(requests)) {
        if (value && req[name] === undefined && limits[name] === undefined) {
          req[name] = value;
          added.push(`${name}=${value}`);
        }
      }
      if (added.length) {
        c.resources = { ...resources, requests: req };
        // A container named by something other than a string is named by its place.
        const which = typeof c.name === 'string' ? `"${c.name}"` : `${at.path}.${list}[${i}]`;
        warnings.push(
          `annex: container ${which} had no ${added.map((a) => a.split('=')[0]).join('/')} request; defaulted to ${added.join(', ')}`,
        );
      }
    });
  }
  return warnings;
}

/**
 * Finds every pod template ({metadata?, spec: {containers: [...]}} under a `template`
 * key) in a custom resource, replaces it with its defaulted copy, and returns the specs
 * of the copies with their field paths.
 */
function replacePodTemplates(node: unknown, path: (string | number)[] = []): PodSpecAt[] {
  if (path.length > 12 || (!isObject(node) && !Array.isArray(node))) return [];
  const found: PodSpecAt[] = [];
  const entries: [string | number, unknown][] = Array.isArray(node)
    ? node.map((v, i) => [i, v])
    : Object.entries(node);
  for (const [key, value] of entries) {
    if (
      key === 'template' &&
      isObject(value) &&
      isObject(value.spec) &&
      Array.isArray(value.spec.containers)
    ) {
      const defaulted = defaultPodTemplateSpec(value);
      (node as Obj)[key] = defaulted;
      found.push({ path: fieldPath([...path, key, 'spec']), spec: defaulted.spec as Obj });
    } else {
      found.push(...replacePodTemplates(value, [...path, key]));
    }
  }
  return found;
}

/** `["spec", "jobs", 0, "template"]` → `spec.jobs[0].template`, as validation prints it. */
const fieldPath = (keys: (string | number)[]) =>
  keys.map((k, i) => (typeof k === 'number' ? `[${k}]` : i ? `.${k}` : k)).join('');
