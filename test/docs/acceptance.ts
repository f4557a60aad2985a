// Console blocks an acceptance suite prints (`<!-- recorded: test/e2e/FILE -->`): the suite
// runs the command as part of its scene (the shipped install) and hands what it printed here,
// where it is compared with the block, normalised as every recorded block is.
// ANNEX_RECORD=1 rewrites a block that differs (never one with an elision: edited by hand).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import {
  consoleBlocks,
  isElision,
  outputLines,
  outputMatches,
  renderSteps,
  replaceBodies,
} from './console.js';

const repo = join(import.meta.dirname, '..', '..');

/** Marker scenes that name a test file: docs-console.test.ts leaves these blocks to it. */
export const isAcceptanceScene = (scene: string) => scene.startsWith('test/e2e/');

/** The doc's command, less a trailing `# note` for the reader, is the one the suite ran. */
const sameCommand = (doc: string, ran: string) => doc.replace(/\s+#\s.*$/, '') === ran;

/**
 * Compares what `command` printed in the suite `suite` (e.g. 'test/e2e/install.test.ts')
 * with the step of `page` that shows it.
 */
export function expectRecorded(
  page: string,
  suite: string,
  command: string,
  printed: string,
): void {
  const path = join(repo, page);
  const text = readFileSync(path, 'utf8');
  const block = consoleBlocks(page, text).find(
    (b) =>
      b.marker &&
      'recorded' in b.marker &&
      b.marker.recorded === suite &&
      b.steps.some((s) => sameCommand(s.command, command)),
  );
  expect(block, `${page}: no block recorded by ${suite} shows $ ${command}`).toBeDefined();
  const steps = block!.steps.map((s) => {
    if (!sameCommand(s.command, command)) return s;
    const lines = outputLines(printed);
    if (outputMatches(s.output, lines)) return s;
    if (process.env.ANNEX_RECORD !== '1' || s.output.some(isElision))
      expect(`$ ${s.command}\n${lines.join('\n')}`).toBe(`$ ${s.command}\n${s.output.join('\n')}`);
    return { ...s, output: lines };
  });
  if (steps.some((s, i) => s !== block!.steps[i])) {
    writeFileSync(path, replaceBodies(text, new Map([[block!.fence, renderSteps(steps)]])));
    console.error(`docs:record: rewrote ${page}:${block!.fence + 1}`);
  }
}
