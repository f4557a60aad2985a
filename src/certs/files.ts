// File names and writes for the certificate folder. Names match a `kubernetes.io/tls`
// Secret (tls.crt, tls.key) plus ca.crt/ca.key, so the same folder can be a mounted Secret.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ConfigError } from '../config/load.js';

export const FILES = {
  caCert: 'ca.crt',
  caKey: 'ca.key',
  cert: 'tls.crt',
  key: 'tls.key',
} as const;

/** Creates `dir` (and parents) or throws a ConfigError that names the directory. */
export async function ensureDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (e) {
    throw new ConfigError(`cannot create certificate directory ${dir}: ${(e as Error).message}`);
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
    throw new ConfigError(`cannot write ${path}: ${(e as Error).message}`);
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
