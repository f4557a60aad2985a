// The real start path without a cluster: a user's module (`features:` / `--load`) declaring
// its own configuration section, given it validated as ctx.config, with ctx.events that
// records nothing without an API server; a bad value refused before anything starts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../config/load.js';
import { UserError } from '../errors.js';
import { createLogger } from '../log.js';
import { startAnnex } from './start.js';

let dir: string;
const quiet = () =>
  createLogger(
    'silent',
    new Writable({
      write: (_c, _e, done) => done(),
    }),
  );

beforeAll(() => {
  // No API server: neither $KUBECONFIG nor in-cluster credentials.
  vi.stubEnv('KUBECONFIG', '');
  vi.stubEnv('KUBERNETES_SERVICE_HOST', '');
  dir = mkdtempSync(join(tmpdir(), 'annex-start-'));
  writeFileSync(
    join(dir, 'guard.mjs'),
    `export default {
  name: 'guard',
  config: {
    schema: {
      type: 'object',
      additionalProperties: false,
      properties: { threshold: { type: 'integer', minimum: 1 }, mode: { enum: ['warn', 'deny'], default: 'warn' } },
    },
    defaults: { threshold: 3 },
  },
  start(ctx) {
    ctx.events.record('default', {
      regarding: { kind: 'Namespace', name: 'default' },
      reason: 'Started',
      action: 'Start',
      note: 'guard started',
      type: 'Normal',
    });
    globalThis.__annexGuardConfig = ctx.config;
  },
};
`,
  );
});
afterAll(() => {
  vi.unstubAllEnvs();
  rmSync(dir, { recursive: true, force: true });
});

const configFile = (name: string, section: string) => {
  const path = join(dir, name);
  writeFileSync(
    path,
    [
      'server: { port: 0 }',
      `tls: { dir: ${JSON.stringify(join(dir, 'certs'))} }`,
      'admission: { names: { enabled: false }, defaults: { enabled: false } }',
      'metrics: { enabled: false }',
      `features: [${JSON.stringify(join(dir, 'guard.mjs'))}]`,
      section,
    ].join('\n'),
  );
  return path;
};

describe("startAnnex: a --load feature's own configuration", () => {
  it('is handed to start validated, defaults filled in', async () => {
    const config = loadConfig({
      file: configFile('ok.yaml', 'featureConfig: { guard: { threshold: 7 } }'),
    });
    const annex = await startAnnex(config, quiet());
    try {
      expect((globalThis as Record<string, unknown>).__annexGuardConfig).toEqual({
        threshold: 7,
        mode: 'warn',
      });
    } finally {
      await annex.close();
    }
  });

  it('a bad value stops the start with one line naming the file and the key path', async () => {
    const file = configFile('bad.yaml', 'featureConfig: { guard: { threshold: "7" } }');
    const started = startAnnex(loadConfig({ file }), quiet());
    await expect(started).rejects.toBeInstanceOf(UserError);
    await expect(started).rejects.toThrow(
      `invalid configuration in ${file}: featureConfig.guard.threshold must be integer`,
    );
  });
});
