// `annex defaults FILE`: print objects as `kubectl apply --dry-run=server -o yaml` would, offline.
// Reading the input and the command live here; the rendering is src/admission/defaults/render.ts.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  clusterScopedKindsOf,
  createRefusal,
  ObjectsError,
  parseObjects,
  printObjects,
  renderObject,
} from '../admission/defaults/index.js';
import type { JsonObject, RenderOptions } from '../admission/defaults/index.js';
import type { Status } from '../apiserver/status.js';
import { UserError } from './errors.js';
import { kubectlCreateErrors } from './kubectl-text.js';

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

/** The objects in a file (or stdin, `-`); every problem is a UserError naming the file. */
export function readObjects(file: string, label = file === '-' ? 'stdin' : file): JsonObject[] {
  try {
    return parseObjects(readInput(file), label);
  } catch (e) {
    if (e instanceof ObjectsError) throw new UserError(e.message);
    throw e;
  }
}

/**
 * What `kubectl apply --dry-run=server -o …` prints for these objects: the ones the API
 * server accepts, rendered (a `List` when several), and kubectl's text for the refused ones.
 */
export function defaultsOutput(
  objects: JsonObject[],
  source: string,
  options: RenderOptions,
): { text: string; refusals: string[] } {
  const refused: Status[] = [];
  const accepted: JsonObject[] = [];
  for (const obj of objects) {
    // Any 5 characters of the generator's alphabet give the verdict of the real suffix.
    const status = createRefusal(obj, 'bcdfg');
    if (status) refused.push(status);
    else accepted.push(renderObject(obj, options));
  }
  return {
    text: accepted.length ? printObjects(accepted, options.output) : '',
    refusals: kubectlCreateErrors(refused, source),
  };
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
    .option(
      '--cluster-scoped <group/Kind>',
      'a cluster-scoped custom resource kind (repeatable); CRDs in the input count too',
      (v: string, prev: string[]) => [...prev, v],
      [],
    )
    .action(
      (
        file: string,
        opts: {
          admissionPlugins: boolean;
          lastApplied: boolean;
          namespace: string;
          output: string;
          clusterScoped: string[];
        },
      ) => {
        if (opts.output !== 'yaml' && opts.output !== 'json') {
          throw new UserError(`--output: must be yaml or json, got "${opts.output}"`);
        }
        const objects = readObjects(file);
        const { text, refusals } = defaultsOutput(objects, file === '-' ? 'STDIN' : file, {
          admissionPlugins: opts.admissionPlugins,
          lastApplied: opts.lastApplied,
          namespace: opts.namespace,
          output: opts.output,
          placeholders: true,
          clusterScoped: new Set([...opts.clusterScoped, ...clusterScopedKindsOf(objects)]),
        });
        process.stdout.write(text);
        for (const line of refusals) process.stderr.write(`${line}\n`);
        if (refusals.length > 0) process.exitCode = 1;
      },
    );
}
