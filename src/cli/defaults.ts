// `annex defaults FILE`: print objects as `kubectl apply --dry-run=server -o yaml` would, offline.
// The result is what reaches a mutating webhook on a real cluster (§4 of admission.md).
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseAllDocuments } from 'yaml';
import {
  applyDefaults,
  applyServerFields,
  goJson,
  isClusterScoped,
  toKubectlYaml,
} from '../admission/defaults/index.js';
import type { JsonObject } from '../admission/defaults/index.js';
import { UserError } from './errors.js';

export const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

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
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parse YAML or JSON text into Kubernetes objects; `List` kinds are expanded like kubectl. */
export function parseObjects(text: string, file: string): JsonObject[] {
  const docs = parseAllDocuments(text);
  const objects: JsonObject[] = [];
  for (const [i, doc] of docs.entries()) {
    const err = doc.errors[0];
    if (err) throw new UserError(`${file}: not valid YAML or JSON: ${err.message.split('\n')[0]}`);
    const value: unknown = doc.toJS();
    if (value === null || value === undefined) continue; // empty document
    const where = docs.length > 1 ? ` (document ${i + 1})` : '';
    if (!isObject(value) || typeof value.apiVersion !== 'string' || !value.apiVersion) {
      throw new UserError(`${file}${where}: not a Kubernetes object: missing apiVersion`);
    }
    if (typeof value.kind !== 'string' || !value.kind) {
      throw new UserError(`${file}${where}: not a Kubernetes object: missing kind`);
    }
    if (value.kind.endsWith('List') && Array.isArray(value.items)) {
      objects.push(...value.items.filter(isObject));
    } else objects.push(value);
  }
  if (objects.length === 0) throw new UserError(`${file}: no Kubernetes object found`);
  return objects;
}

/** kubectl apply stores the object as sent (with its namespace) as JSON plus a newline. */
function withLastApplied(obj: JsonObject, namespace: string): JsonObject {
  const out = structuredClone(obj);
  const meta = isObject(out.metadata) ? out.metadata : (out.metadata = {});
  if (!isClusterScoped(String(out.apiVersion), String(out.kind)) && !meta.namespace) {
    meta.namespace = namespace;
  }
  const annotations = isObject(meta.annotations) ? meta.annotations : {};
  delete annotations[LAST_APPLIED];
  meta.annotations = annotations;
  const applied = `${goJson(out)}\n`;
  meta.annotations = { ...annotations, [LAST_APPLIED]: applied };
  return out;
}

/** One object through kubectl, defaulting, admission plugins and the registry. */
export function renderObject(obj: JsonObject, options: RenderOptions): JsonObject {
  const sent = options.lastApplied ? withLastApplied(obj, options.namespace) : obj;
  const defaulted = applyDefaults(sent, {
    admissionPlugins: options.admissionPlugins,
    ...(options.randomSuffix ? { randomSuffix: options.randomSuffix } : {}),
  });
  return applyServerFields(defaulted, {
    namespace: options.namespace,
    ...(options.now ? { now: options.now } : {}),
    ...(options.uid !== undefined ? { uid: options.uid } : {}),
  });
}

/** The printed text for all objects: YAML documents joined by `---`, or 4-space JSON. */
export function renderText(objects: JsonObject[], options: RenderOptions): string {
  const rendered = objects.map((o) => renderObject(o, options));
  if (options.output === 'json') return rendered.map((o) => `${goJson(o, '    ')}\n`).join('');
  return rendered.map((o) => toKubectlYaml(o)).join('---\n');
}

export function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UserError(`${file}: no such file`);
    if (code === 'EISDIR') throw new UserError(`${file}: is a directory, expected a file`);
    throw new UserError(`${file}: cannot read: ${(e as Error).message}`);
  }
}

export function register(program: Command): void {
  program
    .command('defaults')
    .description(
      'print objects as the API server would store them (kubectl apply --dry-run=server -o yaml), offline',
    )
    .argument('<file>', 'YAML or JSON file with one or more objects, or - for stdin')
    .option(
      '--no-admission-plugins',
      'only scheme defaults: no ServiceAccount, Priority, tolerations',
    )
    .option('--no-last-applied', "omit kubectl apply's last-applied-configuration annotation")
    .option('-n, --namespace <namespace>', 'namespace for objects without one', 'default')
    .option('-o, --output <format>', 'yaml or json', 'yaml')
    .action(
      (
        file: string,
        opts: {
          admissionPlugins: boolean;
          lastApplied: boolean;
          namespace: string;
          output: string;
        },
      ) => {
        if (opts.output !== 'yaml' && opts.output !== 'json') {
          throw new UserError(`--output: must be yaml or json, got "${opts.output}"`);
        }
        const label = file === '-' ? 'stdin' : file;
        const objects = parseObjects(readInput(file), label);
        process.stdout.write(
          renderText(objects, {
            admissionPlugins: opts.admissionPlugins,
            lastApplied: opts.lastApplied,
            namespace: opts.namespace,
            output: opts.output,
          }),
        );
      },
    );
}
