// Every `<!-- recorded: SCENE -->` console block of README.md and docs/ is run, command by
// command, in its scene (test/docs/scenes.ts: one per scene, blocks in page order), and
// what the commands print must match the block, normalised (test/docs/console.ts).
// ANNEX_RECORD=1 (`npm run docs:record`) rewrites the blocks that differ with what ran.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  allConsoleBlocks,
  isElision,
  outputLines,
  outputMatches,
  renderSteps,
  replaceBodies,
  type ConsoleBlock,
} from '../docs/console.js';
import { isAcceptanceScene } from '../docs/acceptance.js';
import { needsCluster, startScene, type Scene } from '../docs/scenes.js';
import { describeCluster } from '../cluster/harness.js';

const repo = join(import.meta.dirname, '..', '..');
const record = process.env.ANNEX_RECORD === '1';

const byScene = new Map<string, ConsoleBlock[]>();
for (const b of allConsoleBlocks(repo)) {
  if (!b.marker || !('recorded' in b.marker)) continue;
  // Blocks an acceptance suite prints are compared there (test/docs/acceptance.ts).
  if (isAcceptanceScene(b.marker.recorded)) continue;
  byScene.set(b.marker.recorded, [...(byScene.get(b.marker.recorded) ?? []), b]);
}

/** Re-recorded bodies, per page, written once every scene ran. */
const rewrites = new Map<string, Map<number, string[]>>();

describe('console blocks of the docs, as the code prints them', () => {
  afterAll(() => {
    for (const [file, bodies] of rewrites) {
      const path = join(repo, file);
      writeFileSync(path, replaceBodies(readFileSync(path, 'utf8'), bodies));
      console.error(`docs:record: rewrote ${bodies.size} block(s) of ${file}`);
    }
  });

  for (const [name, blocks] of byScene) {
    (needsCluster(name) ? describeCluster : describe)(`scene ${name}`, () => {
      let scene: Scene;
      beforeAll(async () => {
        scene = await startScene(name);
      });
      afterAll(async () => {
        await scene?.stop();
      });

      it.each(blocks.map((b) => [`${b.file}:${b.fence + 1}`, b] as const))('%s', async (_, b) => {
        const steps = [];
        for (const step of b.steps) {
          const printed = outputLines(await scene.run(step.command));
          const same = outputMatches(step.output, printed);
          // A step with elisions shows a chosen part: it is edited by hand, never rewritten.
          const rewritable = !step.output.some(isElision);
          if (!same && !(record && rewritable))
            expect(`$ ${step.command}\n${printed.join('\n')}`).toBe(
              `$ ${step.command}\n${step.output.join('\n')}`,
            );
          steps.push(same ? step : { ...step, output: printed });
        }
        if (steps.some((s, i) => s !== b.steps[i])) {
          const bodies = rewrites.get(b.file) ?? new Map<number, string[]>();
          bodies.set(b.fence, renderSteps(steps));
          rewrites.set(b.file, bodies);
        }
      });
    });
  }
});
