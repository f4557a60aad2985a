// The layering of src/ (docs/architecture.md, "## Layers") holds: no folder imports from a
// layer above its own, every folder has a layer, and the built-in features are plain users
// of the contract (src/core) and the public API (src/index.ts) but for the exceptions
// scripts/layers.mjs lists with their reasons.
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  BUILTIN_FEATURES,
  importGraph,
  LAYERS,
  layerOf,
  PRIVATE_IMPORTS,
  privateImports,
  src,
} from '../../scripts/layers.mjs';

describe('the layering of src/', () => {
  it('is read from the table in docs/architecture.md', () => {
    expect(LAYERS.length).toBeGreaterThanOrEqual(5);
    // The contract sits below the framework and every feature; the composition root above them.
    for (const key of ['apiserver', ...BUILTIN_FEATURES]) {
      expect(layerOf('core'), key).toBeLessThan(layerOf(key));
    }
    for (const key of BUILTIN_FEATURES) expect(layerOf(key), key).toBeLessThan(layerOf('server'));
  });

  it('places every folder and top file of src/ in exactly one layer', () => {
    const keys = readdirSync(src).filter((n) => !n.endsWith('.test.ts'));
    const placed = LAYERS.flatMap((l) => l.keys);
    expect(keys.filter((k) => !placed.includes(k))).toEqual([]);
    expect(placed.filter((k) => !keys.includes(k))).toEqual([]);
    expect(new Set(placed).size).toBe(placed.length);
  });

  it('has no import from a layer above the importer', () => {
    const { edges, upward } = importGraph();
    expect(edges.get('server core')).toBeGreaterThan(0);
    expect(upward).toEqual([]);
  });

  describe('the check itself', () => {
    const dir = mkdtempSync(join(tmpdir(), 'annex-layers-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const file = (path: string, text: string) => {
      mkdirSync(join(dir, path, '..'), { recursive: true });
      writeFileSync(join(dir, path), text);
    };

    it('flags an upward import, type-only, re-exported or dynamic', () => {
      file('core/a.ts', "import type { B } from '../server/b.js';\n");
      file('core/c.ts', "export { d } from '../server/d.js';\n");
      file('core/e.ts', "await import('../cli/e.js');\n");
      file('server/b.ts', "import { a } from '../core/a.js';\n");
      file('core/a.test.ts', "import { b } from '../server/b.js';\n");
      const layers = [
        { name: 'low', keys: ['core'] },
        { name: 'high', keys: ['server', 'cli'] },
      ];
      const { upward } = importGraph(dir, layers);
      // The test file's import is not counted: a test may compose from above.
      expect(upward.map((u) => `${u.from} -> ${u.to} in ${basename(u.file)}`).sort()).toEqual([
        'core -> cli in e.ts',
        'core -> server in a.ts',
        'core -> server in c.ts',
      ]);
    });
  });
});

describe('the built-in features', () => {
  const found = privateImports();
  const pairs = new Set(found.map((p) => `${p.feature} -> ${p.module}`));

  it('import nothing from the composition root, the CLI or the deployment layer', () => {
    const above = found.filter((p) => layerOf(p.module.split('/')[1]!) > layerOf(p.feature));
    expect(above).toEqual([]);
  });

  it('take from outside their folder only what src/core or src/index.ts offers, or a listed exception', () => {
    expect(found.length).toBeGreaterThan(0);
    const unlisted = found.filter((p) => !(`${p.feature} -> ${p.module}` in PRIVATE_IMPORTS));
    expect(unlisted).toEqual([]);
  });

  it('list no exception that nothing needs any more', () => {
    expect(Object.keys(PRIVATE_IMPORTS).filter((k) => !pairs.has(k))).toEqual([]);
    for (const reason of Object.values(PRIVATE_IMPORTS)) expect(reason.length).toBeGreaterThan(20);
  });
});
