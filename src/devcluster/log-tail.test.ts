import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { logTail } from './control-plane.js';

describe('logTail', () => {
  const dir = mkdtempSync(join(tmpdir(), 'annex-logtail-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the last lines, without the trailing newline', () => {
    const log = join(dir, 'a.log');
    writeFileSync(log, Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n') + '\n');
    expect(logTail(log, 3)).toBe('line 47\nline 48\nline 49');
  });

  it('says why when the log cannot be read', () => {
    expect(logTail(join(dir, 'missing.log'), 3)).toMatch(/missing\.log unreadable: ENOENT/);
  });
});
