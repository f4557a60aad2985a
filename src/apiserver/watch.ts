// watch=true: a stream of newline-delimited {"type","object"} events, as kube-apiserver
// writes them. From resourceVersion unset/"0" the current state comes first as ADDED;
// from N the provider replays what followed N, or the stream carries one ERROR event
// with a 410 Status ("too old resource version"), which tells clients to relist.
// The watch-list form (sendInitialEvents=true) ends its initial events with a BOOKMARK
// annotated k8s.io/initial-events-end. Selectors apply to every event; an object that
// stops (starts) matching is sent as DELETED (ADDED), as the apiserver's filtered watch does.
import { PassThrough, type Readable } from 'node:stream';
import { objectKey, type SnapshotStore } from './paging.js';
import { queryFlag } from './request-info.js';
import { badRequest, invalid, StatusError, type Status } from '../core/status.js';
import type { KubeObject, Provider, WatchEvent, WatchEventType } from '../core/types.js';

export const WATCH_CONTENT_TYPE = 'application/json;stream=watch';

export interface WatchParams {
  resourceVersion: string;
  resourceVersionMatch: string;
  /** undefined: the server picks (minRequestTimeout..2×). */
  timeoutSeconds?: number;
  allowWatchBookmarks: boolean;
  /** undefined when the client did not say. */
  sendInitialEvents?: boolean;
}

const listOptionsInvalid = (field: string, message: string) =>
  invalid('ListOptions', '', 'meta.k8s.io', [{ field, message: `Forbidden: ${message}` }]);

/** The watch query parameters, with ListOptions validation's rules for the watch-list form. */
export function watchParamsOf(query: URLSearchParams): WatchParams {
  const rawTimeout = query.get('timeoutSeconds');
  let timeoutSeconds: number | undefined;
  if (rawTimeout !== null && rawTimeout !== '') {
    if (!/^[+-]?\d+$/.test(rawTimeout)) {
      throw badRequest(`strconv.ParseInt: parsing ${JSON.stringify(rawTimeout)}: invalid syntax`);
    }
    timeoutSeconds = Number(rawTimeout) > 0 ? Number(rawTimeout) : undefined;
  }
  const p: WatchParams = {
    resourceVersion: query.get('resourceVersion') ?? '',
    resourceVersionMatch: query.get('resourceVersionMatch') ?? '',
    timeoutSeconds,
    allowWatchBookmarks: queryFlag(query, 'allowWatchBookmarks'),
    sendInitialEvents: query.has('sendInitialEvents')
      ? queryFlag(query, 'sendInitialEvents')
      : undefined,
  };
  if (p.sendInitialEvents !== undefined) {
    if (p.resourceVersionMatch !== 'NotOlderThan') {
      throw listOptionsInvalid(
        'resourceVersionMatch',
        'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      );
    }
    if (p.sendInitialEvents && !p.allowWatchBookmarks) {
      throw listOptionsInvalid(
        'allowWatchBookmarks',
        'sendInitialEvents requires setting allowWatchBookmarks to true',
      );
    }
  } else if (p.resourceVersionMatch !== '') {
    throw listOptionsInvalid(
      'resourceVersionMatch',
      'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    );
  }
  return p;
}

export interface WatchSetup {
  store: SnapshotStore;
  provider: Provider;
  params: WatchParams;
  /** Selector predicate; `filtered` false means it accepts everything. */
  match: (o: KubeObject) => boolean;
  filtered: boolean;
  /** What goes in `object` for an object event (the object stamped with apiVersion/kind, or a Table). */
  encode: (o: KubeObject, first: boolean) => unknown;
  /** What goes in `object` for a BOOKMARK at `resourceVersion`. */
  bookmark: (resourceVersion: string, annotations?: Record<string, string>) => unknown;
  bookmarkIntervalMs: number;
  /** kube-apiserver's --min-request-timeout: default watch length is 1–2× this. */
  minRequestTimeoutSeconds: number;
  /** A client this far behind is cut off (it will re-watch), instead of growing memory. */
  maxBufferedBytes: number;
  /** Server shutdown: the watch ends normally (the client re-watches elsewhere). */
  stop?: AbortSignal;
}

export interface Watch {
  stream: Readable;
  /** Stops the watch: unsubscribes, clears timers, ends the stream. Idempotent. */
  close(): void;
}

export async function startWatch(s: WatchSetup): Promise<Watch> {
  if (typeof s.provider.subscribe !== 'function') {
    throw new Error('startWatch needs a provider with subscribe');
  }
  const stream = new PassThrough();
  let closed = false;
  let unsubscribe: (() => void) | undefined;
  const timers: { end?: NodeJS.Timeout; bookmark?: NodeJS.Timeout } = {};
  let sentObject = false;
  let lastRv = s.params.resourceVersion;

  const close = () => {
    if (closed) return;
    closed = true;
    unsubscribe?.();
    clearTimeout(timers.end);
    clearTimeout(timers.bookmark);
    s.stop?.removeEventListener('abort', close);
    stream.end();
  };
  const write = (type: WatchEventType, object: unknown) => {
    if (closed) return;
    stream.write(`${JSON.stringify({ type, object })}\n`);
    if (stream.writableLength + stream.readableLength > s.maxBufferedBytes) close();
  };
  const send = (type: WatchEventType, o: KubeObject) => {
    write(type, s.encode(o, !sentObject));
    sentObject = true;
  };
  const fail = (status: Status) => {
    write('ERROR', status);
    close();
  };

  // Which keys the client currently sees; only tracked for filtered watches, where a
  // MODIFIED can mean "entered" or "left" the selection.
  let visible: Set<string> | undefined;
  const initial = async () => {
    const snap = await s.store.current();
    if (s.filtered) visible = new Set();
    for (const o of snap.items) {
      if (!s.match(o)) continue;
      visible?.add(objectKey(o));
      send('ADDED', o);
    }
    return snap.resourceVersion;
  };

  const p = s.params;
  let from: string;
  if (p.sendInitialEvents === true) {
    from = await initial();
    write('BOOKMARK', s.bookmark(from, { 'k8s.io/initial-events-end': 'true' }));
  } else if (
    p.sendInitialEvents === false ||
    (p.resourceVersion !== '' && p.resourceVersion !== '0')
  ) {
    from =
      p.sendInitialEvents === false ? (await s.store.current()).resourceVersion : p.resourceVersion;
    const kept = s.filtered ? s.store.get(from) : undefined;
    if (kept) visible = new Set(kept.items.filter(s.match).map(objectKey));
  } else {
    from = await initial();
  }
  lastRv = from;

  const onEvent = (ev: WatchEvent, rv: string) => {
    lastRv = rv;
    const key = objectKey(ev.object);
    const matches = s.match(ev.object);
    if (!visible) {
      if (matches) send(ev.type, ev.object);
      return;
    }
    const wasVisible = visible.has(key);
    if (ev.type === 'DELETED') {
      if (wasVisible || matches) send('DELETED', ev.object);
      visible.delete(key);
    } else if (matches) {
      send(wasVisible ? 'MODIFIED' : 'ADDED', ev.object);
      visible.add(key);
    } else if (wasVisible) {
      send('DELETED', ev.object);
      visible.delete(key);
    }
  };

  try {
    unsubscribe = s.provider.subscribe(from, onEvent);
    // A replay delivered synchronously may already have closed the watch (slow client).
    if (closed) unsubscribe();
  } catch (err) {
    if (err instanceof StatusError && err.code === 410) {
      fail(err.status);
      return { stream, close };
    }
    close();
    throw err;
  }

  const seconds = p.timeoutSeconds ?? s.minRequestTimeoutSeconds * (1 + Math.random());
  timers.end = setTimeout(close, seconds * 1000);
  if (p.allowWatchBookmarks) {
    const tick = () => {
      write('BOOKMARK', s.bookmark(lastRv));
      if (!closed) timers.bookmark = setTimeout(tick, s.bookmarkIntervalMs);
    };
    timers.bookmark = setTimeout(tick, s.bookmarkIntervalMs);
  }
  stream.once('close', close);
  if (s.stop?.aborted) close();
  else s.stop?.addEventListener('abort', close, { once: true });
  return { stream, close };
}
