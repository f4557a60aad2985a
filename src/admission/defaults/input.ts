// Reading the objects a command is given: a file, or stdin for `-`.
import { readFileSync } from 'node:fs';
import { ObjectsError, parseObjects } from './index.js';
import type { JsonObject } from './index.js';
import { UserError } from '../../errors.js';

export function readInput(file: string): string {
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UserError(`${file}: no such file`);
    if (code === 'EISDIR') throw new UserError(`${file}: is a directory, expected a file`);
    throw new UserError(`${file}: cannot read: ${(e as Error).message}`);
  }
}

/** The objects in a file (or stdin, `-`); every problem is a UserError naming the file. */
export function readObjects(file: string, label = file === '-' ? 'stdin' : file): JsonObject[] {
  try {
    return parseObjects(readInput(file), label);
  } catch (e) {
    if (e instanceof ObjectsError) throw new UserError(e.message);
    throw e;
  }
}
