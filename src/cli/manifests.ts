// `annex manifests`: the APIService and webhook configuration objects of the enabled
// features (built-in and --load'ed), rendered from their declarations — printed as YAML
// for `kubectl apply -f -`, or written as the files the repo commits (--write DIR).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { stringify } from 'yaml';
import { loadConfig, type ConfigOverrides } from '../config/load.js';
import { MANIFESTS_DIR } from '../install/bundle.js';
import {
  declarationsOf,
  placeholdersFile,
  renderFiles,
  renderObjects,
  serviceRefOf,
} from '../manifests/render.js';
import { writePolicyCrd } from '../policy/crd.js';
import { writeExceptionCrd } from '../policy/exceptions/crd.js';
import { writeMetricCrd } from '../scaling/crd.js';
import { builtinFeatures } from '../server/builtins.js';
import { validateFeatures } from '../core/feature.js';
import { loadFeatureModules } from '../server/load-features.js';

/** Every built-in feature with every option on: what webhooks/ and apiservice/ hold. */
export const ALL_BUILTINS: ConfigOverrides = {
  metrics: { registerMetricsK8sIo: true },
  policy: { enabled: true },
  scaling: { enabled: true },
};

export const PLACEHOLDERS_FILE = 'manifests/registrations.yaml';

/** manifests/registrations.yaml for the kustomize base's config (manifests/config.yaml). */
export async function basePlaceholders(): Promise<string> {
  const config = loadConfig({ file: join(MANIFESTS_DIR, 'config.yaml') });
  return placeholdersFile(declarationsOf(builtinFeatures(config)), serviceRefOf(config));
}

export function register(program: Command): void {
  program
    .command('manifests')
    .description('print the APIServices and webhook configurations of the enabled features')
    .option('-c, --config <file>', 'YAML configuration file')
    .option('--load <module...>', "modules of the user's own features")
    .option('--all', 'every built-in feature with every option on (what the repo commits)')
    .option('--write <dir>', 'write webhooks/*.yaml and apiservice/*/apiservice.yaml under <dir>')
    .action(async (o: { config?: string; load?: string[]; all?: boolean; write?: string }) => {
      const config = loadConfig({ file: o.config, ...(o.all ? { overrides: ALL_BUILTINS } : {}) });
      const features = [
        ...builtinFeatures(config),
        ...(await loadFeatureModules([...config.features, ...(o.load ?? [])])),
      ];
      // As serve and demo refuse them: two declarations rendered to one object would replace each other.
      validateFeatures(features);
      const decls = declarationsOf(features);
      const service = serviceRefOf(config);
      if (!o.write) {
        process.stdout.write(
          renderObjects(decls, service)
            .map((d) => stringify(d, { aliasDuplicateObjects: false }))
            .join('---\n'),
        );
        return;
      }
      const files = renderFiles(decls, service);
      if (o.all) files.set(PLACEHOLDERS_FILE, await basePlaceholders());
      for (const [file, text] of files) {
        const path = join(o.write, file);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, text);
        console.log(`wrote ${path}`);
      }
      if (config.policy.enabled) {
        console.log(`wrote ${writePolicyCrd(o.write)}`);
        console.log(`wrote ${writeExceptionCrd(o.write)}`);
      }
      if (config.scaling.enabled) console.log(`wrote ${writeMetricCrd(o.write)}`);
    });
}
