// A user's modules as the built CLI loads them: declarations that would collide (with each
// other or with a built-in) and a module Node loads as CommonJS are refused by serve,
// manifests and demo alike, in one line naming the fault and its fix, before anything
// starts. No cluster needed.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { expectOneLineError, runCli } from '../cluster/cli.js';
import { freePort } from '../cluster/control-plane.js';

const repo = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'annex-declarations-'));
const annex = pathToFileURL(join(repo, 'dist', 'index.js')).href;
const write = (path: string, text: string) => {
  mkdirSync(join(dir, path, '..'), { recursive: true });
  writeFileSync(join(dir, path), text);
  return join(dir, path);
};
write('esm/package.json', '{"type": "module"}');
const webhookModule = (featureName: string, ...names: string[]) => `
import { allow, validatingWebhook } from '${annex}';
export default {
  name: '${featureName}',
  webhooks: ${JSON.stringify(names)}.map((name) =>
    validatingWebhook({ name, match: { kinds: ['Pod'] }, admit: () => allow() })),
};
`;
const guards = write('esm/guards.js', webhookModule('guards', 'lb-guard.example.com'));
const dup = write('esm/dup.js', webhookModule('dup', 'lb-guard.example.com'));
const names = write('esm/names.js', webhookModule('mine', 'names.annex.dev'));
const segments = write('esm/segments.js', webhookModule('segments', 'x.a.com', 'x.b.com'));
// What `npm init -y` makes ("type": "commonjs") holding an ES module, and what tsc makes
// of feature.ts there: require('annex'), which annex (ESM only) does not export.
write('cjs/package.json', '{"name": "mine", "type": "commonjs"}');
const esmInCjs = write('cjs/esm.js', webhookModule('esm', 'esm.example.com'));
const required = write(
  'cjs/dist/feature.js',
  '"use strict";\nconst annex_1 = require("annex");\nexports.default = annex_1.validatingWebhook;\n',
);
mkdirSync(join(dir, 'cjs', 'node_modules'));
symlinkSync(repo, join(dir, 'cjs', 'node_modules', 'annex'));

const DUP =
  'annex: validating webhook "lb-guard.example.com" is declared by features "guards" and "dup" (served at /validate/lb-guard.example.com, registered as ValidatingWebhookConfiguration annex-lb-guard): declare it once';
const commands = {
  manifests: (...load: string[]) => runCli(['manifests', ...load.flatMap((l) => ['--load', l])]),
  serve: async (...load: string[]) =>
    runCli([
      'serve',
      '--port',
      String(await freePort()),
      '--certs',
      join(dir, 'certs'),
      ...load.flatMap((l) => ['--load', l]),
    ]),
  demo: (...load: string[]) => runCli(['demo', ...load.flatMap((l) => ['--load', l])]),
};

describe.each(Object.entries(commands))('annex %s --load', (_, cli) => {
  afterAll(() => rmSync(join(dir, 'certs'), { recursive: true, force: true }));

  it('refuses a webhook declared by two features', async () => {
    expect(expectOneLineError(await cli(guards, dup))).toBe(DUP);
  });

  it("refuses a user's webhook named as a built-in one (which it would replace)", async () => {
    expect(expectOneLineError(await cli(names))).toBe(
      'annex: validating webhook "names.annex.dev" is declared by features "names" and "mine" (served at /validate/names.annex.dev, registered as ValidatingWebhookConfiguration annex-names): declare it once',
    );
  });

  it('refuses two webhooks whose names share the first label by their default configuration, not their paths', async () => {
    expect(expectOneLineError(await cli(segments))).toContain(
      'would both be registered as ValidatingWebhookConfiguration annex-x',
    );
  });

  it('names the fix for an ES module in a CommonJS package', async () => {
    const line = expectOneLineError(await cli(esmInCjs));
    expect(line).toContain('Cannot use import statement outside a module');
    expect(line).toContain(
      `set "type": "module" in ${join(dir, 'cjs', 'package.json')} (npm pkg set type=module), or name the file .mjs`,
    );
  });

  it('names the fix for a CommonJS require() of annex', async () => {
    const line = expectOneLineError(await cli(required));
    expect(line).toContain('No "exports" main defined');
    expect(line).toContain('set "type": "module"');
  });
});

describe("annex serve: a --load feature's own configuration section", () => {
  const configured = write(
    'esm/configured.js',
    `import { defineFeature } from '${annex}';
export default defineFeature({
  name: 'configured',
  config: {
    schema: { type: 'object', properties: { threshold: { type: 'integer', minimum: 1 } } },
    defaults: { threshold: 3 },
  },
});
`,
  );
  const serve = async (config: string) =>
    runCli([
      'serve',
      '--port',
      String(await freePort()),
      '--certs',
      join(dir, 'certs'),
      '-c',
      config,
      '--load',
      configured,
    ]);
  afterAll(() => rmSync(join(dir, 'certs'), { recursive: true, force: true }));

  it('refuses a bad value in one line naming the file and the key path', async () => {
    const file = write('bad-config.yaml', 'featureConfig:\n  configured:\n    threshold: 0\n');
    const r = await serve(file);
    expect(expectOneLineError(r)).toBe(
      `annex: invalid configuration in ${file}: featureConfig.configured.threshold must be >= 1`,
    );
  });

  it('refuses a section no loaded feature declares', async () => {
    const file = write('typo-config.yaml', 'featureConfig:\n  configred: {}\n');
    const r = await serve(file);
    expect(expectOneLineError(r)).toBe(
      `annex: invalid configuration in ${file}: featureConfig.configred: no feature is named "configred" (features with a config: configured)`,
    );
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));
