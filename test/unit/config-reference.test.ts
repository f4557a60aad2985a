// docs/configuration.md is the rendering of src/config/schema.ts (as the CRDs are of their
// schemas): a setting added, renamed or re-described without `npm run manifests` fails here.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { configSchema } from '../../src/config/schema.js';

const repo = join(import.meta.dirname, '..', '..');
// scripts/ is plain ESM JavaScript (run by node directly): loaded by URL, untyped.
const script = () => import(new URL('../../scripts/config-reference.mjs', import.meta.url).href);

describe('docs/configuration.md', () => {
  it('is the rendering of src/config/schema.ts (npm run manifests writes it)', async () => {
    const { CONFIG_REFERENCE_PATH, schemaSource, renderConfigReference } = await script();
    const source = schemaSource(repo);
    const rendered = renderConfigReference({
      schema: configSchema,
      source,
      defaults: loadConfig(),
    });
    expect(readFileSync(join(repo, CONFIG_REFERENCE_PATH), 'utf8')).toBe(rendered);
  });

  it('describes every key, and names each one the schema has', async () => {
    const { schemaSource, undescribed } = await script();
    const source = schemaSource(repo);
    expect(undescribed({ schema: configSchema, source })).toEqual([]);
    const page = readFileSync(join(repo, 'docs/configuration.md'), 'utf8');
    const keys = ['server.maxInFlight.review', 'tls.inject.crds', 'policy.native', 'features'];
    // A section a built-in declares beside its code is described from there.
    keys.push('metrics.kubelet.caFile', 'admission.defaults.requests.cpu', 'scaling.allow.urls');
    for (const key of keys) expect(page).toContain(`| \`${key}\` |`);
  });
});
