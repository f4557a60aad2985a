import { describe, expect, it } from 'vitest';
import { KubeconfigError } from './errors.js';
import { fileToken } from './token.js';

/** A fake disk: known paths only, ENOENT otherwise. */
function disk(files: Record<string, string>) {
  return (p: string) => {
    if (!(p in files)) throw Object.assign(new Error(`no ${p}`), { code: 'ENOENT' });
    return Buffer.from(files[p]!);
  };
}

describe('fileToken', () => {
  it('keeps the last good token when a re-read fails, and waits for the interval', () => {
    let now = 0;
    const files: Record<string, string> = { '/t': 'a' };
    const tok = fileToken('/t', { readFile: disk(files), refreshMs: 1000, now: () => now });
    files['/t'] = 'b';
    now = 999;
    expect(tok()).toBe('a');
    now = 1000;
    expect(tok()).toBe('b');
    delete files['/t'];
    now = 5000;
    expect(tok()).toBe('b');
  });

  it('refresh() re-reads at once (after a 401) and says whether the token changed', () => {
    const files: Record<string, string> = { '/t': 'a\n' };
    const tok = fileToken('/t', { readFile: disk(files), now: () => 0 });
    expect(tok.refresh()).toBe(false);
    files['/t'] = 'rotated';
    expect(tok()).toBe('a'); // the minute is not up
    expect(tok.refresh()).toBe(true);
    expect(tok()).toBe('rotated');
  });

  it('a missing or empty file is an error naming it', () => {
    expect(() => fileToken('/none', { readFile: disk({}) })).toThrow(
      new KubeconfigError('cannot read token file "/none" (ENOENT)'),
    );
    expect(() => fileToken('/e', { readFile: disk({ '/e': ' \n' }) })).toThrow(
      'token file "/e" is empty',
    );
  });
});
