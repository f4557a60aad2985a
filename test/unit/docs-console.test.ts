// Every console block of README.md and docs/ is either recorded by a run
// (test/e2e/docs-console.test.ts) or says why none can produce it here; and the rules the
// recorder compares by: normalising, elisions, rewriting a block in place.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  allConsoleBlocks,
  consoleBlocks,
  normalise,
  outputMatches,
  renderSteps,
  replaceBodies,
} from '../docs/console.js';

const repo = join(import.meta.dirname, '..', '..');

/**
 * The one place listing blocks not converted yet (by their first command), each with why.
 * Empty is the goal: a block converted drops out of this list, and a stale entry fails.
 */
const NOT_YET: Record<string, string> = {};

describe('console blocks of README.md and docs/', () => {
  const blocks = allConsoleBlocks(repo);

  it('finds the blocks', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(23);
  });

  it('each is recorded by a scene or says why it cannot be (known exceptions listed once)', () => {
    const unmarked = blocks
      .filter((b) => b.marker === null)
      .map((b) => `${b.file}: $ ${b.steps[0]?.command ?? ''}`);
    expect(unmarked.filter((u) => !(u in NOT_YET))).toEqual([]);
    expect(Object.keys(NOT_YET).filter((k) => !unmarked.includes(k))).toEqual([]);
  });

  it('each recorded block has a command and "not recorded" gives a reason', () => {
    for (const b of blocks) {
      if (b.marker && 'recorded' in b.marker) expect(b.steps.length, b.file).toBeGreaterThan(0);
      if (b.marker && 'notRecorded' in b.marker)
        expect(b.marker.notRecorded.length, b.file).toBeGreaterThan(20);
    }
  });
});

describe('the recorder', () => {
  const page = [
    'Text.',
    '<!-- recorded: cli -->',
    '```console',
    '$ kubectl get x    # a comment',
    'NAME   AGE',
    'a      4s',
    '',
    '$ annex y',
    '...',
    'last',
    '```',
    'More.',
  ].join('\n');

  it('parses steps, their output and the blank lines between them', () => {
    const [b] = consoleBlocks('p.md', page);
    expect(b!.marker).toEqual({ recorded: 'cli' });
    expect(b!.steps).toEqual([
      { command: 'kubectl get x    # a comment', output: ['NAME   AGE', 'a      4s'], blanks: 1 },
      { command: 'annex y', output: ['...', 'last'], blanks: 0 },
    ]);
  });

  it('a block without a marker, or with "not recorded"', () => {
    const [a, b] = consoleBlocks(
      'p.md',
      '```console\n$ a\n```\n<!-- not recorded: needs a VM -->\n```console\n$ b\n```',
    );
    expect(a!.marker).toBeNull();
    expect(b!.marker).toEqual({ notRecorded: 'needs a VM' });
  });

  it('normalises ages, times, generated names, ports, uids and column widths', () => {
    expect(normalise('a      4s     True')).toBe(normalise('a   1m30s   True'));
    expect(normalise('20261202142921364-f87872-1   1s     Deny')).toBe(
      normalise('20261203010101000-0a0b0c-7   12s    Deny'),
    );
    expect(normalise('{"time":1796118108590,"at":"2026-11-29T18:34:52Z"}')).toBe(
      normalise('{"time":1796000000000,"at":"2027-01-01T00:00:00.5Z"}'),
    );
    expect(normalise('https://127.0.0.1:39211/x')).toBe(normalise('https://127.0.0.1:1/x'));
    expect(normalise('uid: 0f8fad5b-d9cb-469f-a165-70867728950e')).toBe(
      normalise('uid: 7c9e6679-7425-40de-944b-e07fc1f90ae7'),
    );
    // What the run says is still compared.
    expect(normalise('a      4s     True')).not.toBe(normalise('a      4s     False'));
    expect(normalise('  name: nu')).not.toBe(normalise('name: nu'));
    expect(normalise('worker-2   625m    15s')).toBe(normalise('worker-2   625m    2s'));
    expect(normalise('worker-2   625m')).not.toBe(normalise('worker-2   626m'));
    expect(normalise('x   3m20s')).toBe(normalise('x   45m'));
    expect(normalise('window 1.006s')).toBe('window <age>');
  });

  it('an elision line matches any run of lines, none included', () => {
    expect(outputMatches(['a', '...', 'z'], ['a', 'z'])).toBe(true);
    expect(outputMatches(['a', '…   (more)', 'z'], ['a', 'b', 'c', 'z'])).toBe(true);
    expect(outputMatches(['a', '  ...', 'z'], ['a', 'b'])).toBe(false);
    expect(outputMatches(['a', 'z'], ['a', 'b', 'z'])).toBe(false);
    expect(outputMatches(['a'], ['a', 'extra'])).toBe(false);
  });

  it('rewrites a block body in place, keeping commands, blank lines and the page around it', () => {
    const [b] = consoleBlocks('p.md', page);
    const steps = [{ ...b!.steps[0]!, output: ['NAME   AGE', 'b      9s'] }, b!.steps[1]!];
    const out = replaceBodies(page, new Map([[b!.fence, renderSteps(steps)]]));
    expect(out).toBe(page.replace('a      4s', 'b      9s'));
  });
});
