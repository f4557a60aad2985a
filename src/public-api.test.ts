// The built-in features are plain users of the toolkit: whatever they take from annex's
// framework (server, aggregated-API framework, kube client, webhook declarations,
// configuration) must be something `import … from 'annex'` gives a user too. Their own
// domain code (name rules, defaults, the metrics store) is theirs to import freely.
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as annex from './index.js';

const src = import.meta.dirname;
const FRAMEWORK = [
  'server/',
  'apiserver/',
  'kube/',
  'manifests/',
  'config/',
  'json.ts',
  'log.ts',
  'admission/webhook.ts',
  'admission/verdict.ts',
  'admission/review.ts',
];
/** Each built-in feature: its entry files and its own domain folder. */
const BUILT_INS: [string[], string][] = [
  [
    ['admission/index.ts', 'admission/webhooks/names.ts', 'admission/webhooks/defaults.ts'],
    'admission/',
  ],
  [
    ['metrics/feature.ts', 'metrics/group.ts', 'metrics/storage.ts', 'metrics/index.ts'],
    'metrics/',
  ],
  [
    [
      'scaling/feature.ts',
      'scaling/groups.ts',
      'scaling/poller.ts',
      'scaling/sources.ts',
      'scaling/schema.ts',
      'scaling/author.ts',
      'scaling/access.ts',
      'scaling/outbound.ts',
    ],
    'scaling/',
  ],
];

/** `import { a, type B } from '../x.js'` → [module path relative to src, names]. */
function imports(file: string): [string, string[]][] {
  const text = readFileSync(join(src, file), 'utf8');
  const out: [string, string[]][] = [];
  for (const m of text.matchAll(/^import (type )?\{([^}]*)\} from '(\.[^']+)';/gm)) {
    const target = relative(src, resolve(dirname(join(src, file)), m[3]!)).replace(/\.js$/, '.ts');
    const names = m[2]!
      .split(',')
      .map(
        (n) =>
          n
            .trim()
            .replace(/^type /, '')
            .split(' as ')[0]!,
      )
      .filter(Boolean);
    out.push([target, names]);
  }
  return out;
}

describe('the public API', () => {
  const publicNames = new Set(Object.keys(annex));
  // Types vanish at run time: read them from the source of the index instead.
  const indexText = readFileSync(join(src, 'index.ts'), 'utf8');
  const exported = (name: string) =>
    publicNames.has(name) || new RegExp(`\\b(type )?${name}\\b`).test(indexText);

  it.each(BUILT_INS)(
    'the built-in feature in %s takes from the framework only what users get',
    (files, own) => {
      const missing: string[] = [];
      let checked = 0;
      for (const f of files) {
        for (const [target, names] of imports(f)) {
          if (target.startsWith(own) && !FRAMEWORK.includes(target)) continue;
          if (!FRAMEWORK.some((fw) => target === fw || target.startsWith(fw))) continue;
          for (const n of names) {
            checked++;
            if (!exported(n)) missing.push(`${f}: ${n} from ${target}`);
          }
        }
      }
      expect(missing).toEqual([]);
      expect(checked).toBeGreaterThan(3);
    },
  );

  it('exports the contract, the declarations, the answers and the server', () => {
    for (const n of [
      'defineFeature',
      'serve',
      'validatingWebhook',
      'mutatingWebhook',
      'allow',
      'denyInvalid',
      'mutate',
      'resource',
      'ObjectStore',
      'mirror',
      'StatusError',
    ]) {
      expect(typeof (annex as Record<string, unknown>)[n], n).toBe('function');
    }
  });
});
