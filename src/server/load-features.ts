// `annex serve --load FILE` and the `features:` config key: a user's module of features,
// imported as it is. A module exports its features as default (one or a list) or as
// `features`; a bare webhook or conversion counts as a feature of its own.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UserError } from '../errors.js';
import type { Webhook } from '../admission/webhook.js';
import type { Conversion } from '../conversion/declare.js';
import type { Feature } from '../core/feature.js';

const isWebhook = (v: object): v is Webhook =>
  typeof (v as Webhook).admit === 'function' && Array.isArray((v as Webhook).registrations);

const isConversion = (v: object): v is Conversion =>
  typeof (v as Conversion).crdName === 'string' && typeof (v as Conversion).converters === 'object';

/**
 * How to make Node load `file` as the ES module a feature is (it imports 'annex', which is
 * ESM only), when Node loads it as CommonJS instead: a .cjs/.cts file, or a .js file whose
 * package is not "type": "module" (`npm init -y` writes "type": "commonjs"). Else undefined.
 */
export function esmFix(file: string): string | undefined {
  if (/\.c[jt]s$/.test(file)) return 'annex features are ES modules: name the file .mjs';
  if (!file.endsWith('.js')) return undefined;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      let type: unknown;
      try {
        type = (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: unknown }).type;
      } catch {
        return undefined;
      }
      if (type === 'module') return undefined;
      return `Node loads it as CommonJS, annex features are ES modules: set "type": "module" in ${pkg} (npm pkg set type=module), or name the file .mjs`;
    }
    if (dirname(dir) === dir) {
      return 'Node loads it as CommonJS, annex features are ES modules: add a package.json with "type": "module", or name the file .mjs';
    }
  }
}

/**
 * import(), holding back the warnings Node emits meanwhile: loading ESM syntax as CommonJS
 * warns on a line of its own before failing, and the one-line error says it better. On
 * success they are emitted as usual.
 */
async function importHoldingWarnings(url: string): Promise<unknown> {
  const listeners = process.listeners('warning');
  const held: Error[] = [];
  const hold = (w: Error) => held.push(w);
  process.removeAllListeners('warning').on('warning', hold);
  let loaded = false;
  try {
    const mod: unknown = await import(url);
    loaded = true;
    return mod;
  } finally {
    process.off('warning', hold);
    for (const l of listeners) process.on('warning', l);
    if (loaded) for (const w of held) process.emitWarning(w);
  }
}

export async function loadFeatureModules(paths: readonly string[]): Promise<Feature[]> {
  const features: Feature[] = [];
  for (const path of paths) {
    const file = resolve(path);
    if (!existsSync(file)) throw new UserError(`feature module ${path}: no such file`);
    let mod: { default?: unknown; features?: unknown };
    try {
      mod = (await importHoldingWarnings(pathToFileURL(file).href)) as typeof mod;
    } catch (e) {
      // ESM syntax parsed as CommonJS, or a CommonJS require() of annex (ESM only).
      const code = (e as NodeJS.ErrnoException).code;
      const asCommonJs =
        e instanceof SyntaxError ||
        code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' ||
        code === 'ERR_REQUIRE_ESM';
      const fix = asCommonJs ? esmFix(file) : undefined;
      throw new UserError(
        `feature module ${path} failed to load: ${(e as Error).message}${fix ? ` (${fix})` : ''}`,
      );
    }
    const exported = mod.default ?? mod.features;
    const list = Array.isArray(exported) ? exported : [exported];
    for (const f of list) {
      if (typeof f !== 'object' || f === null || typeof (f as Feature).name !== 'string') {
        throw new UserError(
          `feature module ${path} must export its features (or webhooks) as default or as "features"`,
        );
      }
      // A module may export a bare webhook or conversion: it is then a feature of its own.
      features.push(
        isWebhook(f)
          ? { name: `${f.type}-${f.name}`, webhooks: [f] }
          : isConversion(f)
            ? { name: `convert-${f.name}`, conversions: [f] }
            : (f as Feature),
      );
    }
  }
  return features;
}
