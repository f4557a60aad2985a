// The one reader of bearer-token files (a kubeconfig's tokenFile, the Pod's projected
// ServiceAccount token, the kubelet token of the metrics source). Projected tokens are
// rotated by the kubelet, so the file is re-read, as client-go's cachingTokenSource does,
// once the last read is a minute old — and at once after the server answered 401.
import { readFileSync } from 'node:fs';
import { KubeconfigError } from './errors.js';

/** Reads a file; injectable so that parsing stays testable without touching the disk. */
export type FileReader = (path: string) => Buffer;

export interface FileToken {
  /** The token to send now (re-read when the last read is `refreshMs` old). */
  (): string;
  /** Re-reads the file now (after a 401); true when the token changed. */
  refresh(): boolean;
  readonly file: string;
}

export interface FileTokenOptions {
  readFile?: FileReader | undefined;
  /** client-go: 1 min. */
  refreshMs?: number | undefined;
  now?: () => number;
}

/**
 * Reads `file` once now (a missing or empty file is an error naming it) and returns the
 * cached token. A failed re-read keeps the last token: a rotation in progress (the kubelet
 * swaps a symlink) must not break every request.
 */
export function fileToken(file: string, opts: FileTokenOptions = {}): FileToken {
  const read = opts.readFile ?? ((p: string) => readFileSync(p));
  const refreshMs = opts.refreshMs ?? 60_000;
  const now = opts.now ?? Date.now;
  const load = (): string => {
    let text: string;
    try {
      text = read(file).toString('utf8').trim();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      throw new KubeconfigError(`cannot read token file "${file}" (${code})`);
    }
    if (!text) throw new KubeconfigError(`token file "${file}" is empty`);
    return text;
  };
  let token = load();
  let readAt = now();
  const reload = (): boolean => {
    readAt = now();
    try {
      const next = load();
      const changed = next !== token;
      token = next;
      return changed;
    } catch {
      return false;
    }
  };
  const get = () => {
    if (now() - readAt >= refreshMs) reload();
    return token;
  };
  return Object.assign(get, { refresh: reload, file });
}
