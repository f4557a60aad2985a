import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { repoManifest } from './wire.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('repoManifest', () => {
  it('writes no YAML warning to stderr, whatever the file holds', () => {
    // A Node warning would be a line outside annex's JSON logs (annex demo, the e2e runs).
    const dir = mkdtempSync(join(tmpdir(), 'annex-wire-'));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    try {
      const file = join(dir, 'odd.yaml');
      // A key that is a collection warns as the document becomes plain objects.
      writeFileSync(file, 'kind: !odd APIService\n---\nkind: Service\n? [a, b]\n: c\n');
      expect(repoManifest(relative(repo, file))).toEqual([
        { kind: 'APIService' },
        { kind: 'Service', '[ a, b ]': 'c' },
      ]);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
