// `annex defaults FILE`: print objects as `kubectl apply --dry-run=server -o yaml` would, offline.
// The command lives here; the rendering is src/admission/defaults/render.ts, the refusals
// src/admission/defaults/validate.ts. With --admission=annex the objects also pass annex's
// own mutating webhook (defaults) and AdmissionPolicies, as on a cluster running annex.
import type { Command } from 'commander';
import {
  applyDefaults,
  clusterScopedKindsOf,
  createRefusal,
  printObjects,
  renderObject,
} from '../admission/defaults/index.js';
import type { JsonObject, RenderOptions } from '../admission/defaults/index.js';
import { applyAnnexDefaults } from '../admission/webhooks/defaults.js';
import type { Status } from '../core/status.js';
import type { KubeObject } from '../core/types.js';
import { loadConfig } from '../config/load.js';
import type { Config } from '../config/load.js';
import type { CompiledPolicy } from '../policy/compile.js';
import { evaluate } from '../policy/evaluate.js';
import { loadPolicies } from '../policy/load.js';
import { createRequest } from './create-request.js';
import { UserError } from '../errors.js';
import { readObjects } from '../admission/defaults/input.js';
import { kubectlCreateErrors } from './kubectl-text.js';

export { readInput, readObjects } from '../admission/defaults/input.js';

/** annex's own admission, applied after the API server's: its defaults webhook, then policies. */
export interface AnnexAdmission {
  /** The defaults webhook's settings; absent when the webhook is off. */
  defaults?: Config['admission']['defaults'];
  policies: readonly CompiledPolicy[];
}

type Admitted = { object: JsonObject; warnings: string[] } | { status: Status; warnings: string[] };

/**
 * One rendered object through annex's mutating webhook and policies. The API server
 * re-applies its scheme defaults after every mutation, so the result is defaulted again.
 */
function admitWithAnnex(rendered: JsonObject, annex: AnnexAdmission): Admitted {
  let obj = rendered;
  const warnings: string[] = [];
  if (annex.defaults?.enabled) {
    const v = applyAnnexDefaults(createRequest(structuredClone(obj) as KubeObject), annex.defaults);
    warnings.push(...(v.warnings ?? []));
    if (!v.allowed) return { status: v.status, warnings };
    if (v.object) obj = applyDefaults(v.object as JsonObject);
  }
  if (annex.policies.length > 0) {
    const e = evaluate(annex.policies, createRequest(obj as KubeObject));
    warnings.push(...e.warnings);
    if (!e.allowed && e.status) return { status: e.status, warnings };
    if (e.mutated) obj = applyDefaults(e.mutated as JsonObject);
  }
  return { object: obj, warnings };
}

/**
 * What `kubectl apply --dry-run=server -o …` prints for these objects: the ones the API
 * server accepts, rendered (a `List` when several), kubectl's text for the refused ones, and
 * the warnings (`Warning: …`) annex's admission gave.
 */
export function defaultsOutput(
  objects: JsonObject[],
  source: string,
  options: RenderOptions,
  annex?: AnnexAdmission,
): { text: string; refusals: string[]; warnings: string[] } {
  const refused: Status[] = [];
  const accepted: JsonObject[] = [];
  const warnings: string[] = [];
  for (const obj of objects) {
    // Any 5 characters of the generator's alphabet give the verdict of the real suffix.
    const status = createRefusal(obj, 'bcdfg');
    if (status) {
      refused.push(status);
      continue;
    }
    const rendered = renderObject(obj, options);
    if (!annex) {
      accepted.push(rendered);
      continue;
    }
    const admitted = admitWithAnnex(rendered, annex);
    warnings.push(...admitted.warnings.map((w) => `Warning: ${w}`));
    if ('status' in admitted) refused.push(admitted.status);
    else accepted.push(admitted.object);
  }
  return {
    text: accepted.length ? printObjects(accepted, options.output) : '',
    refusals: kubectlCreateErrors(refused, source),
    warnings,
  };
}

const collect = (v: string, prev: string[]) => [...prev, v];

interface Options {
  admissionPlugins: boolean;
  lastApplied: boolean;
  namespace: string;
  output: string;
  clusterScoped: string[];
  admission: string;
  config?: string;
  policy: string[];
}

/** The annex admission the options ask for, or undefined for the API server's alone. */
function annexAdmission(opts: Options): AnnexAdmission | undefined {
  if (opts.admission !== 'builtin' && opts.admission !== 'annex') {
    throw new UserError(`--admission: must be builtin or annex, got "${opts.admission}"`);
  }
  if (opts.admission === 'builtin') {
    if (opts.policy.length > 0 || opts.config) {
      throw new UserError('-p/--policy and -c/--config need --admission=annex');
    }
    return undefined;
  }
  const config = loadConfig(opts.config ? { file: opts.config } : {});
  const policies = loadPolicies(opts.policy);
  return {
    ...(config.admission.defaults.enabled ? { defaults: config.admission.defaults } : {}),
    policies,
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
      collect,
      [],
    )
    .option(
      '--admission <which>',
      "builtin: the API server's own admission; annex: also annex's defaults webhook and the -p policies",
      'builtin',
    )
    .option('-c, --config <file>', "annex configuration (the defaults webhook's settings)")
    .option('-p, --policy <path>', 'AdmissionPolicy file or folder (repeatable)', collect, [])
    .action((file: string, opts: Options) => {
      if (opts.output !== 'yaml' && opts.output !== 'json') {
        throw new UserError(`--output: must be yaml or json, got "${opts.output}"`);
      }
      const annex = annexAdmission(opts);
      const objects = readObjects(file);
      const { text, refusals, warnings } = defaultsOutput(
        objects,
        file === '-' ? 'STDIN' : file,
        {
          admissionPlugins: opts.admissionPlugins,
          lastApplied: opts.lastApplied,
          namespace: opts.namespace,
          output: opts.output,
          placeholders: true,
          clusterScoped: new Set([...opts.clusterScoped, ...clusterScopedKindsOf(objects)]),
        },
        annex,
      );
      for (const line of warnings) process.stderr.write(`${line}\n`);
      process.stdout.write(text);
      for (const line of refusals) process.stderr.write(`${line}\n`);
      if (refusals.length > 0) process.exitCode = 1;
    });
}
