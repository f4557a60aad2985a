// Hot reload of the serving certificate. A mounted Secret changes by an atomic symlink swap
// (kubelet writes a new `..<timestamp>` folder, then renames `..data` over the old link), and
// other writers replace files one by one. Both are seen through fs.watch on the folder, with
// a content poll behind it because fs.watch misses events on some filesystems and when the
// watched folder itself is replaced.
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import {
  checkServingFiles,
  readServingFiles,
  type ServingFiles,
  type ServingMaterial,
} from './load.js';

export interface WatchOptions {
  /** Content poll period. Default 2000 ms. */
  pollIntervalMs?: number;
  /** Quiet time after a file event before reading. Default 200 ms. */
  debounceMs?: number;
}

/**
 * Calls `onChange` with each new, valid key pair, and `onError` (once per bad content) when
 * the folder changes to something unusable; the caller then keeps serving the previous
 * pair. Bad content is reported only once it has stayed unchanged for 2 × debounceMs, so
 * a writer caught between tls.key and tls.crt causes no spurious error. Returns a stop
 * function. Changes made before the call are not reported: load first, then watch.
 */
export function watchServingMaterial(
  dir: string,
  onChange: (material: ServingMaterial) => void,
  onError: (err: Error) => void,
  opts: WatchOptions = {},
): () => void {
  const debounceMs = opts.debounceMs ?? 200;
  let seen = digest(readServingFiles(dir));
  const settleMs = debounceMs * 2;
  // Bad content not yet reported, and when it was first read.
  let suspect: { digest: string; since: number } | undefined;
  let stopped = false;
  let pending: NodeJS.Timeout | undefined;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(pending);
    pending = setTimeout(check, ms);
    pending.unref();
  };

  // Synchronous from read to callback, so two checks never interleave.
  function check(): void {
    if (stopped) return;
    const files = readServingFiles(dir);
    const d = digest(files);
    if (d === seen) return;
    let material: ServingMaterial;
    try {
      material = checkServingFiles(files);
    } catch (e) {
      const now = Date.now();
      if (d !== suspect?.digest) suspect = { digest: d, since: now };
      const wait = suspect.since + settleMs - now;
      if (wait > 0) return schedule(wait);
      seen = d;
      suspect = undefined;
      return onError(e as Error);
    }
    seen = d;
    suspect = undefined;
    try {
      onChange(material);
    } catch (e) {
      onError(e as Error);
    }
  }

  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, { persistent: false }, () => schedule(debounceMs));
    // The poll below still runs; a dead watcher only costs latency.
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(check, opts.pollIntervalMs ?? 2000);
  poll.unref();

  return () => {
    stopped = true;
    clearTimeout(pending);
    clearInterval(poll);
    watcher?.close();
  };
}

function digest(files: ServingFiles): string {
  const h = createHash('sha256');
  for (const part of [files.cert, files.key, files.ca]) {
    h.update(part === undefined ? '\u0000absent' : part instanceof Error ? `\u0000${part.message}` : part);
    h.update('\u0000');
  }
  return h.digest('hex');
}
