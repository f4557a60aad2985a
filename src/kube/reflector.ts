// A reflector in miniature: list (when there is no resourceVersion to start from), then
// watch from the list's resourceVersion; on a clean end, resume from the last version
// seen; on 410 Gone (history compacted), list again; on failure, back off and retry. A
// backoff after a connection failure ends early at the client's next 2xx answer from the API
// server (it is back), and a watch that stood for a while starts the next backoff afresh.
import type { IncomingMessage } from 'node:http';
import type { KubeClient, Query } from './client.js';
import { KubeApiError, KubeUnreachableError, statusFromBody, type KubeStatus } from './errors.js';

export type WatchEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; object: T }
  /** The full current state: replace whatever you hold (first list, or relist after 410). */
  | { type: 'RELISTED'; items: T[]; resourceVersion: string };

export interface WatchOptions {
  /** Start after this version; without it the watch starts with a list (RELISTED). */
  resourceVersion?: string;
  /** labelSelector, fieldSelector… applied to both list and watch. */
  query?: Query;
  /** Server-side lifetime of one watch request (default: random 5–10 min, as client-go). */
  timeoutSeconds?: number;
  backoff?: { initialMs: number; maxMs: number };
}

class Expired extends Error {}

function rvOf(o: unknown): string | undefined {
  const rv = (o as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === 'string' && rv !== '' ? rv : undefined;
}

export function startWatch<T>(
  client: KubeClient,
  path: string,
  opts: WatchOptions,
  onEvent: (e: WatchEvent<T>) => void,
  onError: (err: Error) => void,
): () => void {
  const initialMs = opts.backoff?.initialMs ?? 1000;
  const maxMs = opts.backoff?.maxMs ?? 30_000;
  let rv = opts.resourceVersion;
  let stopped = false;
  let abortCurrent: (() => void) | undefined;
  let sleepTimer: NodeJS.Timeout | undefined;
  let wake: (() => void) | undefined;
  let delay = initialMs;

  const deliver = (e: WatchEvent<T>) => {
    try {
      onEvent(e);
    } catch (err) {
      onError(err as Error); // a consumer bug must not kill the watch
    }
  };

  /** Connected this long, a watch was healthy: what fails next is a new outage. */
  const HEALTHY_MS = 1000;
  let connectedAt: number | undefined;
  /**
   * Backoffs left that the client's next 2xx answer may cut short. A connection failure
   * sets it: while the server comes back it may answer 429/503/404 (storage and CRD
   * handlers still starting) for seconds, and each of those would double the delay again.
   * Bounded, so a path that keeps failing while others succeed backs off as usual.
   */
  const EARLY_WAKES = 5;
  let earlyWakes = 0;

  /** Resolves true when the client got a 2xx answer (the server is back) before `ms` ran out. */
  const sleep = (ms: number, untilAnswered: boolean) => {
    let off: (() => void) | undefined;
    return new Promise<boolean>((resolve) => {
      wake = () => resolve(false);
      sleepTimer = setTimeout(() => resolve(false), ms);
      if (untilAnswered) off = client.onceAnswered(() => resolve(true));
    }).finally(() => {
      clearTimeout(sleepTimer);
      off?.(); // a timer that ran out leaves no callback behind
    });
  };

  async function relist(): Promise<void> {
    const list = await client.list<T>(path, opts.query);
    const listRv = list.metadata?.resourceVersion;
    if (!listRv) throw new Error(`GET ${path}: the list carries no resourceVersion`);
    rv = listRv;
    deliver({ type: 'RELISTED', items: list.items ?? [], resourceVersion: listRv });
  }

  /** One watch request; resolves when the server ends it. Returns whether events arrived. */
  async function watchOnce(): Promise<boolean> {
    const timeoutSeconds = opts.timeoutSeconds ?? Math.floor(300 + Math.random() * 300);
    const handle = client.open('GET', path, {
      query: {
        ...opts.query,
        watch: 1,
        resourceVersion: rv,
        allowWatchBookmarks: true,
        timeoutSeconds,
      },
    });
    abortCurrent = handle.abort;
    const res = await handle.response;
    const code = res.statusCode ?? 0;
    if (code >= 200 && code < 300) connectedAt = Date.now();
    if (code < 200 || code >= 300) {
      const text = await new Promise<string>((resolve) => {
        let t = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (t += c));
        res.on('end', () => resolve(t));
        res.on('error', () => resolve(t));
      });
      const status = statusFromBody(code, text);
      if (code === 410) throw new Expired(status.message);
      throw new KubeApiError('GET', path, status);
    }
    return readEvents(res, handle.abort, (timeoutSeconds + 30) * 1000);
  }

  function readEvents(res: IncomingMessage, abort: () => void, idleMs: number): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      let buf = '';
      let got = false;
      let done = false;
      let idle: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(idle);
        if (err) reject(err);
        else resolve(got);
      };
      const arm = () => {
        clearTimeout(idle);
        // A silent connection (a dead peer behind a NAT) would otherwise hang forever.
        idle = setTimeout(() => {
          finish(new Error(`GET ${path}: watch silent for ${idleMs} ms`));
          abort();
        }, idleMs);
      };
      arm();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        arm();
        buf += chunk;
        let nl: number;
        while (!done && (nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl).trim();
          buf = buf.slice(nl + 1);
          if (!line) continue;
          let ev: { type?: string; object?: unknown };
          try {
            ev = JSON.parse(line) as typeof ev;
          } catch {
            finish(new Error(`GET ${path}: the watch stream carried a line that is not JSON`));
            abort();
            return;
          }
          if (ev.type === 'ERROR') {
            const st = ev.object as KubeStatus;
            finish(st?.code === 410 ? new Expired(st.message) : new KubeApiError('GET', path, st));
            abort();
            return;
          }
          if (
            ev.type !== 'ADDED' &&
            ev.type !== 'MODIFIED' &&
            ev.type !== 'DELETED' &&
            ev.type !== 'BOOKMARK'
          ) {
            continue;
          }
          got = true;
          rv = rvOf(ev.object) ?? rv;
          deliver({ type: ev.type, object: ev.object as T });
        }
      });
      res.on('end', () => finish());
      res.on('error', (e) => finish(e));
      res.on('close', () => finish(stopped ? undefined : new Error(`GET ${path}: watch closed`)));
    });
  }

  void (async () => {
    let expiredInARow = 0;
    while (!stopped) {
      connectedAt = undefined;
      try {
        if (rv === undefined) await relist();
        if (stopped) break;
        const started = Date.now();
        const progressed = await watchOnce();
        expiredInARow = 0;
        if (progressed) delay = initialMs;
        // A clean end (the server's timeout): resume from the last version at once,
        // unless the server keeps closing straight away.
        if (progressed || Date.now() - started > 1000) continue;
      } catch (err) {
        if (stopped) break;
        if (err instanceof Expired) {
          rv = undefined; // history compacted: the next turn lists again
          if (expiredInARow++ === 0) continue;
        } else {
          if (err instanceof KubeUnreachableError) earlyWakes = EARLY_WAKES;
          onError(err as Error);
        }
      }
      if (connectedAt !== undefined) {
        earlyWakes = 0; // connected: the server is back
        if (Date.now() - connectedAt > HEALTHY_MS) delay = initialMs;
      }
      const back = await sleep(delay * (0.8 + Math.random() * 0.4), earlyWakes > 0);
      if (back) earlyWakes--;
      // Woken by the server serving again: back off from the start, not from where the
      // outage left the delay.
      delay = back ? initialMs : Math.min(delay * 2, maxMs);
    }
  })();

  return () => {
    stopped = true;
    abortCurrent?.();
    clearTimeout(sleepTimer);
    wake?.();
  };
}
