// A feature's own configuration section: `featureConfig.<feature name>` in the file (or
// `serve({ config: { featureConfig } })`), validated at start against the JSON Schema the
// feature declares, its defaults under the file's values, and the result handed to the
// feature as `ctx.config`. Validated as the rest of the configuration is (ajv, defaults
// applied, every error in one line naming the file and the key path), once the modules are
// loaded: only then is a feature's schema known.
import { Ajv } from 'ajv';
import { configFileOf, invalidConfig, merge, type Config } from './load.js';
import { UserError } from '../errors.js';

/** What a feature declares of its section (core's Feature.config, structurally). */
export interface DeclaredConfig {
  name: string;
  config?: { schema: object; defaults: unknown } | undefined;
}

/**
 * Each feature's configuration by name, for those that declare one: its defaults, the file's
 * section over them, checked against its schema (whose own `default`s fill in too). Throws a
 * UserError on a section that does not validate, one no feature declares, or a schema ajv
 * cannot compile.
 */
export function featureConfigs(
  config: Config,
  features: readonly DeclaredConfig[],
): Map<string, unknown> {
  const file = configFileOf(config);
  const sections = config.featureConfig ?? {};
  const declaring = features.filter((f) => f.config);
  for (const name of Object.keys(sections)) {
    if (declaring.some((f) => f.name === name)) continue;
    const which = features.some((f) => f.name === name)
      ? `feature "${name}" declares no config`
      : `no feature is named "${name}"`;
    const known = declaring.map((f) => f.name).join(', ');
    throw new UserError(
      `invalid configuration${file ? ` in ${file}` : ''}: featureConfig.${name}: ${which} (features with a config: ${known || 'none'})`,
    );
  }
  const out = new Map<string, unknown>();
  // One ajv per start: each feature's schema compiled once, defaults applied as annex's own.
  const ajv = new Ajv({ useDefaults: true, allErrors: true });
  for (const f of declaring) {
    const { schema, defaults } = f.config!;
    let validate;
    try {
      validate = ajv.compile(schema);
    } catch (e) {
      throw new UserError(`feature "${f.name}": its config schema: ${(e as Error).message}`);
    }
    const value = merge(structuredClone(defaults) ?? {}, structuredClone(sections[f.name]));
    if (!validate(value)) throw invalidConfig(file, validate.errors, `featureConfig.${f.name}`);
    out.set(f.name, value);
  }
  return out;
}
