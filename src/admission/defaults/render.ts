// The object as the API server will see it: parsed from YAML or JSON like kubectl, optionally
// annotated like `kubectl apply`, then defaulted, mutated by the built-in admission plugins and
// completed with the fields the registry sets — what `kubectl apply --dry-run=server -o yaml`
// prints, and what reaches a mutating webhook on a real cluster (§4 of admission.md).
import { parseAllDocuments } from 'yaml';
import { applyDefaults } from './apply.js';
import { applyServerFields, isClusterScoped } from './server-fields.js';
import { isObject } from './util.js';
import type { JsonObject } from './util.js';
import { generatedNameBytes, goString } from '../names/index.js';
import { PLACEHOLDERS } from './placeholders.js';
import { goJson, toKubectlYaml } from './yaml.js';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Input that is not a set of Kubernetes objects; the message names the file (and document). */
export class ObjectsError extends Error {}

export interface RenderOptions {
  admissionPlugins: boolean;
  output: 'yaml' | 'json';
  namespace: string;
  /** Add kubectl apply's last-applied-configuration annotation (kubectl, not the server). */
  lastApplied: boolean;
  now?: Date;
  /** metadata.uid; random by default, `false` to omit. */
  uid?: string | false;
  randomSuffix?: () => string;
  /**
   * Print placeholders (placeholders.ts) for what the API server allocates at random or
   * from the clock: uid, creationTimestamp, generated suffixes, cluster IPs, node ports.
   */
  placeholders?: boolean;
  /** Cluster-scoped custom resources (`group/Kind`), e.g. from the CRDs in the input. */
  clusterScoped?: ReadonlySet<string>;
}

/** Parse YAML or JSON text into Kubernetes objects; `List` kinds are expanded like kubectl. */
export function parseObjects(text: string, file: string): JsonObject[] {
  const docs = parseAllDocuments(text, { logLevel: 'error' }); // no Node warning lines on stderr
  const objects: JsonObject[] = [];
  for (const [i, doc] of docs.entries()) {
    const err = doc.errors[0];
    if (err) {
      throw new ObjectsError(`${file}: not valid YAML or JSON: ${err.message.split('\n')[0]}`);
    }
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue; // empty document
    const where = docs.length > 1 ? ` (document ${i + 1})` : '';
    if (!isObject(value) || typeof value.apiVersion !== 'string' || !value.apiVersion) {
      throw new ObjectsError(`${file}${where}: not a Kubernetes object: missing apiVersion`);
    }
    if (typeof value.kind !== 'string' || !value.kind) {
      throw new ObjectsError(`${file}${where}: not a Kubernetes object: missing kind`);
    }
    if (value.kind.endsWith('List') && Array.isArray(value.items)) {
      objects.push(...value.items.filter(isObject));
    } else objects.push(value);
  }
  if (objects.length === 0) throw new ObjectsError(`${file}: no Kubernetes object found`);
  return objects;
}

/** kubectl apply stores the object as sent (with its namespace) as JSON plus a newline. */
export function withLastApplied(
  obj: JsonObject,
  namespace: string,
  clusterScoped?: ReadonlySet<string>,
): JsonObject {
  const out = structuredClone(obj);
  const meta = isObject(out.metadata) ? out.metadata : (out.metadata = {});
  if (
    !isClusterScoped(String(out.apiVersion), String(out.kind), clusterScoped) &&
    !meta.namespace
  ) {
    meta.namespace = namespace;
  }
  const annotations = isObject(meta.annotations) ? meta.annotations : {};
  delete annotations[LAST_APPLIED];
  meta.annotations = annotations;
  const applied = `${goJson(out)}\n`;
  meta.annotations = { ...annotations, [LAST_APPLIED]: applied };
  return out;
}

/** A generateName without a name: the name it will get, its 5 random characters a placeholder. */
function withGeneratedName(obj: JsonObject): JsonObject {
  const meta = isObject(obj.metadata) ? obj.metadata : undefined;
  if (!meta || meta.name || typeof meta.generateName !== 'string' || !meta.generateName) return obj;
  const name = goString(generatedNameBytes(meta.generateName, '')) + PLACEHOLDERS.random;
  return { ...obj, metadata: { ...meta, name } };
}

/** One object through kubectl, defaulting, admission plugins and the registry. */
export function renderObject(obj: JsonObject, options: RenderOptions): JsonObject {
  const sent = options.lastApplied
    ? withLastApplied(obj, options.namespace, options.clusterScoped)
    : obj;
  const p = options.placeholders === true;
  if (p) obj = withGeneratedName(obj);
  const randomSuffix = p ? () => PLACEHOLDERS.random : options.randomSuffix;
  const defaulted = applyDefaults(sent, {
    admissionPlugins: options.admissionPlugins,
    ...(randomSuffix ? { randomSuffix } : {}),
  });
  return applyServerFields(defaulted, {
    namespace: options.namespace,
    ...(options.clusterScoped ? { clusterScoped: options.clusterScoped } : {}),
    ...(p
      ? { now: PLACEHOLDERS.now, uid: PLACEHOLDERS.allocated, allocated: PLACEHOLDERS.allocated }
      : {}),
    ...(options.now ? { now: options.now } : {}),
    ...(options.uid !== undefined ? { uid: options.uid } : {}),
  });
}

/**
 * The printed text, as kubectl prints it: one object as itself, several as a `v1` `List`
 * in JSON (YAML documents joined by `---`); JSON indented by 4 spaces.
 */
export function renderText(objects: JsonObject[], options: RenderOptions): string {
  const rendered = objects.map((o) => renderObject(o, options));
  return printObjects(rendered, options.output);
}

/** kubectl's printer for one or more objects (`-o json` of several is a `List`). */
export function printObjects(objects: JsonObject[], output: 'yaml' | 'json'): string {
  if (output === 'json') {
    const one =
      objects.length === 1
        ? objects[0]
        : { apiVersion: 'v1', items: objects, kind: 'List', metadata: { resourceVersion: '' } };
    return `${goJson(one, '    ')}\n`;
  }
  return objects.map((o) => toKubectlYaml(o)).join('---\n');
}
