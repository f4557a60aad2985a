// Loads the configuration once: defaults from the schema, then an optional YAML file,
// then explicit overrides (CLI flags). Invalid settings stop the start with the path
// of the bad field, never a stack trace.
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { configSchema, type Config } from './schema.js';
import { UserError } from '../errors.js';
import { isObject } from '../json.js';

export type { Config } from './schema.js';

const ajv = new Ajv({ useDefaults: true, allErrors: true });
const validate = ajv.compile(configSchema);

/** Deep-merges plain objects; arrays and scalars from `b` replace those in `a`. */
export function merge(a: unknown, b: unknown): unknown {
  if (!isObject(a) || !isObject(b)) return b === undefined ? a : b;
  const out: Record<string, unknown> = { ...a };
  for (const [k, v] of Object.entries(b)) out[k] = merge(a[k], v);
  return out;
}

export type ConfigOverrides = { [K in keyof Config]?: Partial<Config[K]> };

export function loadConfig(opts: { file?: string; overrides?: ConfigOverrides } = {}): Config {
  let fromFile: unknown = {};
  if (opts.file) {
    let text: string;
    try {
      text = readFileSync(opts.file, 'utf8');
    } catch (e) {
      throw new UserError(`cannot read config file ${opts.file}: ${(e as Error).message}`);
    }
    try {
      fromFile = parseYaml(text, { logLevel: 'error' }) ?? {}; // no Node warning lines beside the JSON log
    } catch (e) {
      throw new UserError(`config file ${opts.file} is not valid YAML: ${(e as Error).message}`);
    }
    if (!isObject(fromFile)) throw new UserError(`config file ${opts.file} must hold a mapping`);
  }
  const seed = {
    server: {},
    tls: {},
    registration: {},
    kube: {},
    admission: {},
    metrics: {},
    policy: {},
    scaling: {},
    log: {},
  };
  const candidate = merge(merge(seed, fromFile), opts.overrides ?? {});
  if (!validate(candidate)) throw invalidConfig(opts.file, validate.errors);
  if (opts.file) files.set(candidate, opts.file);
  return candidate;
}

/** The file a configuration was loaded from, if any: for errors found after loading. */
const files = new WeakMap<Config, string>();
export const configFileOf = (config: Config): string | undefined => files.get(config);

/**
 * The one line of a configuration that does not validate: the file, then each bad field's
 * dotted path (under `prefix`, for a section validated on its own) and what is wrong.
 */
export function invalidConfig(
  file: string | undefined,
  errors: ErrorObject[] | null | undefined,
  prefix = '',
): UserError {
  const where = file ? ` in ${file}` : '';
  const msgs = (errors ?? []).map(
    (e) =>
      `${[prefix, e.instancePath.replace(/^\//, '').replaceAll('/', '.')].filter(Boolean).join('.') || '(root)'} ${e.message}${
        e.keyword === 'additionalProperties'
          ? ` (${(e.params as { additionalProperty: string }).additionalProperty})`
          : ''
      }`,
  );
  return new UserError(`invalid configuration${where}: ${msgs.join('; ')}`);
}
