// File names and writes for the certificate folder. Names match a `kubernetes.io/tls`
// Secret (tls.crt, tls.key) plus ca.crt/ca.key, so the same folder can be a mounted Secret.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { UserError } from '../errors.js';

export const FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  cert: 'tls.crt',
  key: 'tls.key',
} as const;

/** Creates `dir` (and parents) or throws a UserError that names the directory. */
export async function ensureDir(dir: string): Promise<void> {
  try {
    await mkdirParents(resolve(dir));
  } catch (e) {
    throw new UserError(`cannot create certificate directory ${dir}: ${(e as Error).message}`);
  }
}

/**
 * `mkdir -p` that creates each parent at most once. Node 20's `mkdir({ recursive: true })`
 * spins forever at 100% CPU when mkdir fails with ENOENT although the parent exists (any
 * path under /proc, for one), so a bad --out would hang instead of failing.
 */
async function mkdirParents(dir: string): Promise<void> {
  try {
    await mkdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      if ((await stat(dir)).isDirectory()) return;
      throw new Error(`${dir} exists and is not a directory`);
    }
    const parent = dirname(dir);
    if (code !== 'ENOENT' || parent === dir) throw e;
    await mkdirParents(parent);
    // A second ENOENT now is final; EEXIST means someone else just made it.
    await mkdir(dir).catch((e2: NodeJS.ErrnoException) => {
      if (e2.code !== 'EEXIST') throw e2;
    });
  }
}

/**
 * Writes through a temp file in the same folder, then renames: a reader (or a crash) never
 * sees half a key. `mode` applies from creation, so a key is never briefly world-readable.
 */
export async function writeFileAtomic(path: string, data: string, mode: number): Promise<void> {
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  try {
    const fh = await open(tmp, 'wx', mode);
    try {
      await fh.writeFile(data);
      await fh.chmod(mode); // exact mode whatever the umask
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new UserError(`cannot write ${path}: ${(e as Error).message}`);
  }
}

/** File contents, or undefined when it does not exist. Other read errors propagate. */
export async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}
