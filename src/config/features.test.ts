import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserError } from '../errors.js';
import { featureConfigs, type DeclaredConfig } from './features.js';
import { loadConfig } from './load.js';

const dir = mkdtempSync(join(tmpdir(), 'annex-feature-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, yaml: string) => {
  const path = join(dir, name);
  writeFileSync(path, yaml);
  return path;
};

const guard: DeclaredConfig = {
  name: 'guard',
  config: {
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: {
        threshold: { type: 'integer', minimum: 1 },
        labels: { type: 'array', items: { type: 'string' } },
        mode: { type: 'string', enum: ['warn', 'deny'], default: 'warn' },
      },
    },
    defaults: { threshold: 3, labels: ['team'] },
  },
};
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(UserError);
    return (e as Error).message;
  }
  return 'accepted';
};

describe('featureConfig.<feature>: a feature’s own section', () => {
  it('is empty by default, and a mapping of mappings', () => {
    expect(loadConfig().featureConfig).toEqual({});
    expect(
      refusal(() => loadConfig({ file: file('list.yaml', 'featureConfig:\n  guard: 3\n') })),
    ).toBe(`invalid configuration in ${dir}/list.yaml: featureConfig.guard must be object`);
  });

  it('fills in the declared defaults and the schema’s own, under the file’s values', () => {
    const config = loadConfig({
      file: file('ok.yaml', 'featureConfig:\n  guard:\n    threshold: 5\n'),
    });
    expect(featureConfigs(config, [guard, { name: 'other' }])).toEqual(
      new Map([['guard', { threshold: 5, labels: ['team'], mode: 'warn' }]]),
    );
    // No section at all: the defaults.
    expect(featureConfigs(loadConfig(), [guard]).get('guard')).toEqual({
      threshold: 3,
      labels: ['team'],
      mode: 'warn',
    });
    // The declaration's defaults are copied, never written to.
    expect(guard.config!.defaults).toEqual({ threshold: 3, labels: ['team'] });
  });

  it('refuses a bad value in one line naming the file and the key path', () => {
    const config = loadConfig({
      file: file('bad.yaml', 'featureConfig:\n  guard:\n    threshold: 0\n    extra: 1\n'),
    });
    expect(refusal(() => featureConfigs(config, [guard]))).toBe(
      `invalid configuration in ${dir}/bad.yaml: featureConfig.guard must NOT have additional properties (extra); featureConfig.guard.threshold must be >= 1`,
    );
    const overrides = loadConfig({ overrides: { featureConfig: { guard: { mode: 'loud' } } } });
    expect(refusal(() => featureConfigs(overrides, [guard]))).toBe(
      'invalid configuration: featureConfig.guard.mode must be equal to one of the allowed values',
    );
  });

  it('refuses a section no feature declares (a typo is not ignored)', () => {
    const config = loadConfig({
      file: file('typo.yaml', 'featureConfig:\n  gaurd: {}\n  other: {}\n'),
    });
    expect(refusal(() => featureConfigs(config, [guard, { name: 'other' }]))).toBe(
      `invalid configuration in ${dir}/typo.yaml: featureConfig.gaurd: no feature is named "gaurd" (features with a config: guard)`,
    );
    expect(
      refusal(() =>
        featureConfigs(loadConfig({ overrides: { featureConfig: { other: {} } } }), [
          guard,
          { name: 'other' },
        ]),
      ),
    ).toBe(
      'invalid configuration: featureConfig.other: feature "other" declares no config (features with a config: guard)',
    );
  });

  it('refuses a schema ajv cannot compile, naming the feature', () => {
    const broken: DeclaredConfig = {
      name: 'broken',
      config: { schema: { type: 'nope' }, defaults: {} },
    };
    expect(refusal(() => featureConfigs(loadConfig(), [broken]))).toMatch(
      /^feature "broken": its config schema: /,
    );
  });
});
