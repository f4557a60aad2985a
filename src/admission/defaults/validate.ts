// What the API server refuses on a create, for `annex defaults` (and `annex check`): a value
// of the wrong JSON type (400, the decoder's message), then the strategy's field errors (422):
// the name rules of the kind and the required parts of a pod spec. Not the whole of Kubernetes'
// validation — the cases the differential test generates and proves against v1.37.2.
import {
  causeReason,
  fieldErrorBody,
  goQuote,
  groupOf,
  validateName,
  validateObjectMeta,
} from '../names/index.js';
import type { FieldErrorType } from '../names/index.js';
import { invalidStatus } from '../verdict.js';
import type { Status } from '../../core/status.js';
import { StatusError } from '../../core/status.js';
import { isObject } from './util.js';
import type { JsonObject } from './util.js';

/** A Go field type: a scalar, a slice (`[]T`), a string map, or a struct named in `structs`. */
type GoType = string;

/** The Go structs whose fields annex type-checks, as encoding/json would decode them. */
const structs: Record<string, Record<string, GoType>> = {
  ObjectMeta: {
    name: 'string',
    generateName: 'string',
    namespace: 'string',
    labels: 'map[string]string',
    annotations: 'map[string]string',
    finalizers: '[]string',
  },
  PodTemplateSpec: { metadata: 'ObjectMeta', spec: 'PodSpec' },
  PodSpec: {
    volumes: '[]Volume',
    initContainers: '[]Container',
    containers: '[]Container',
    ephemeralContainers: '[]EphemeralContainer',
    restartPolicy: 'string',
    terminationGracePeriodSeconds: 'int64',
    nodeSelector: 'map[string]string',
    serviceAccountName: 'string',
    nodeName: 'string',
    hostNetwork: 'bool',
  },
  Volume: { name: 'string' },
  Container: {
    name: 'string',
    image: 'string',
    command: '[]string',
    args: '[]string',
    workingDir: 'string',
    ports: '[]ContainerPort',
    imagePullPolicy: 'string',
  },
  EphemeralContainer: { name: 'string', image: 'string' },
  ContainerPort: { name: 'string', hostPort: 'int32', containerPort: 'int32', protocol: 'string' },
  DeploymentSpec: { replicas: 'int32', template: 'PodTemplateSpec', minReadySeconds: 'int32' },
  StatefulSetSpec: { replicas: 'int32', template: 'PodTemplateSpec', serviceName: 'string' },
  DaemonSetSpec: { template: 'PodTemplateSpec', minReadySeconds: 'int32' },
  ReplicaSetSpec: { replicas: 'int32', template: 'PodTemplateSpec' },
  JobSpec: {
    parallelism: 'int32',
    completions: 'int32',
    backoffLimit: 'int32',
    template: 'PodTemplateSpec',
  },
  JobTemplateSpec: { metadata: 'ObjectMeta', spec: 'JobSpec' },
  CronJobSpec: { schedule: 'string', jobTemplate: 'JobTemplateSpec', suspend: 'bool' },
};

/** Top-level fields per kind (`metadata` is ObjectMeta everywhere). */
const kinds: Record<string, Record<string, GoType>> = {
  '/Pod': { spec: 'PodSpec' },
  '/PodTemplate': { template: 'PodTemplateSpec' },
  'apps/Deployment': { spec: 'DeploymentSpec' },
  'apps/StatefulSet': { spec: 'StatefulSetSpec' },
  'apps/DaemonSet': { spec: 'DaemonSetSpec' },
  'apps/ReplicaSet': { spec: 'ReplicaSetSpec' },
  'batch/Job': { spec: 'JobSpec' },
  'batch/CronJob': { spec: 'CronJobSpec' },
};

/** How Go prints a field's type in an UnmarshalTypeError: `[]v1.Container`, `int32`, `v1.PodSpec`. */
function goName(t: GoType): string {
  if (t.startsWith('[]')) return `[]${goName(t.slice(2))}`;
  if (t in structs) return t === 'ObjectMeta' ? 'v1.ObjectMeta' : `v1.${t}`;
  return t;
}

/** encoding/json's name for a JSON value's type: `string`, `number 1.5`, `object`… */
function jsonKind(v: unknown, target: GoType): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number')
    return /^u?int/.test(target) && !Number.isInteger(v) ? `number ${v}` : 'number';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'string' ? 'string' : 'object';
}

interface TypeError {
  found: string;
  struct: string;
  path: string;
  type: GoType;
}

/** Whether `v` decodes into `t` without an UnmarshalTypeError at this level. */
function fits(v: unknown, t: GoType): boolean {
  if (v === null) return true;
  if (t === 'string') return typeof v === 'string';
  if (t === 'bool') return typeof v === 'boolean';
  if (/^u?int/.test(t)) return typeof v === 'number' && Number.isInteger(v);
  if (t.startsWith('[]')) return Array.isArray(v);
  return isObject(v); // maps and structs
}

/** The earliest type error in document order, as json.Unmarshal reports it. */
function firstTypeError(
  value: unknown,
  t: GoType,
  struct: string,
  path: string,
): TypeError | undefined {
  if (!fits(value, t)) return { found: jsonKind(value, t), struct, path, type: t };
  if (value === null) return undefined;
  if (t.startsWith('[]')) {
    for (const item of value as unknown[]) {
      const e = firstTypeError(item, t.slice(2), struct, path);
      if (e) return e;
    }
    return undefined;
  }
  if (t === 'map[string]string') {
    for (const v of Object.values(value as JsonObject)) {
      if (!fits(v, 'string')) return { found: jsonKind(v, 'string'), struct, path, type: 'string' };
    }
    return undefined;
  }
  const fields = structs[t];
  if (!fields) return undefined;
  return fieldsError(value as JsonObject, fields, t, path);
}

function fieldsError(
  obj: JsonObject,
  fields: Record<string, GoType>,
  struct: string,
  path: string,
): TypeError | undefined {
  for (const [k, v] of Object.entries(obj)) {
    const t = fields[k];
    if (t === undefined) continue;
    const e = firstTypeError(v, t, struct, path ? `${path}.${k}` : k);
    if (e) return e;
  }
  return undefined;
}

interface FieldError {
  field: string;
  type: FieldErrorType;
  detail: string;
  value?: unknown;
}

const required = (field: string, detail = ''): FieldError => ({
  field,
  type: 'Required value',
  detail,
});

/**
 * ValidatePodSpec's required parts: containers, their names and images; no ephemeral ones on
 * a Pod, whose ephemeral volumes' claims (`<pod>-<volume>`) must be valid names.
 */
function podSpecErrors(
  spec: JsonObject | undefined,
  at: string,
  podName: string | undefined,
): FieldError[] {
  const errs: FieldError[] = [];
  const list = (key: string) => (Array.isArray(spec?.[key]) ? (spec[key] as unknown[]) : []);
  const isPod = podName !== undefined;
  list('volumes').forEach((v, i) => {
    // Without a name there is no claim name to judge (measured: no error then).
    if (!podName || !isObject(v) || !isObject(v.ephemeral) || typeof v.name !== 'string') return;
    const claim = `${podName}-${v.name}`;
    for (const detail of validateName('dns1123-subdomain', claim)) {
      errs.push({
        field: `${at}.volumes[${i}].name`,
        type: 'Invalid value',
        value: v.name,
        detail: `PVC name ${goQuote(claim)}: ${detail}`,
      });
    }
  });
  const containers = list('containers');
  if (containers.length === 0) errs.push(required(`${at}.containers`));
  for (const key of ['containers', 'initContainers']) {
    list(key).forEach((c, i) => {
      const container = isObject(c) ? c : {};
      if (!container.name) errs.push(required(`${at}.${key}[${i}].name`));
      if (!container.image) errs.push(required(`${at}.${key}[${i}].image`));
    });
  }
  if (isPod && list('ephemeralContainers').length > 0) {
    errs.push({
      field: `${at}.ephemeralContainers`,
      type: 'Forbidden',
      detail: 'cannot be set on create',
    });
  }
  return errs;
}

/** An Indexed Job's pods are named `<job>-<index>-…`: the last index must make a DNS label. */
function indexedJobErrors(obj: JsonObject, name: string) {
  const spec = isObject(obj.spec) ? obj.spec : {};
  if (spec.completionMode !== 'Indexed' || typeof spec.completions !== 'number') return [];
  const label = `${name}-${spec.completions - 1}`;
  if (validateName('dns1123-label', label).length === 0) return [];
  const detail = `will not able to create pod with invalid DNS label: ${label}`;
  return [
    {
      field: 'metadata.name',
      message: fieldErrorBody('Invalid value', name, detail),
      reason: causeReason('Invalid value'),
    },
  ];
}

/** Where each kind keeps its pod spec, and the field path printed for it. */
function podSpecsOf(key: string, obj: JsonObject): [JsonObject | undefined, string][] {
  const spec = isObject(obj.spec) ? obj.spec : undefined;
  const template = (holder: JsonObject | undefined) => {
    const t = holder && isObject(holder.template) ? holder.template : undefined;
    return t && isObject(t.spec) ? t.spec : undefined;
  };
  switch (key) {
    case '/Pod':
      return [[spec, 'spec']];
    case 'apps/Deployment':
    case 'apps/StatefulSet':
    case 'apps/DaemonSet':
    case 'apps/ReplicaSet':
    case 'batch/Job':
      return [[template(spec), 'spec.template.spec']];
    case 'batch/CronJob': {
      const jt = spec && isObject(spec.jobTemplate) ? spec.jobTemplate : undefined;
      const js = jt && isObject(jt.spec) ? jt.spec : undefined;
      return [[template(js), 'spec.jobTemplate.spec.template.spec']];
    }
    default:
      return [];
  }
}

/**
 * The name the object gets on create (`suffix` standing for the generator's 5 characters)
 * and what the kind's strategy says about it, as Status causes.
 */
export function nameCauses(obj: JsonObject, suffix: string) {
  const meta = isObject(obj.metadata) ? obj.metadata : {};
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  const names = validateObjectMeta(
    groupOf(String(obj.apiVersion)),
    String(obj.kind),
    { name: str(meta.name), generateName: str(meta.generateName) },
    suffix,
  );
  const causes = names.errors.map((e) => ({
    field: e.field,
    message: e.cause,
    reason: causeReason(e.type),
  }));
  return { names, causes };
}

/**
 * The API server's answer to creating `obj` when it refuses it, else undefined. `suffix`
 * stands for the 5 random characters of a generated name.
 */
export function createRefusal(obj: JsonObject, suffix: string): Status | undefined {
  const apiVersion = String(obj.apiVersion);
  const kind = String(obj.kind);
  const group = groupOf(apiVersion);
  const key = `${group}/${kind}`;
  const version = apiVersion.slice(apiVersion.indexOf('/') + 1);
  const typeErr = fieldsError(obj, { metadata: 'ObjectMeta', ...(kinds[key] ?? {}) }, kind, '');
  if (typeErr) {
    const message = `${kind} in version "${version}" cannot be handled as a ${kind}: json: cannot unmarshal ${typeErr.found} into Go struct field ${typeErr.struct === kind ? kind : typeErr.struct}.${typeErr.path} of type ${goName(typeErr.type)}`;
    return new StatusError(400, 'BadRequest', message).status;
  }
  const { names, causes } = nameCauses(obj, suffix);
  for (const [spec, at] of podSpecsOf(key, obj)) {
    const podName = key === '/Pod' ? names.name : undefined;
    for (const e of podSpecErrors(spec, at, podName)) {
      const message = fieldErrorBody(e.type, e.value, e.detail);
      causes.push({ field: e.field, message, reason: causeReason(e.type) });
    }
  }
  if (key === 'batch/Job') causes.push(...indexedJobErrors(obj, names.name));
  return causes.length ? invalidStatus(group, kind, names.nameBytes, causes) : undefined;
}
