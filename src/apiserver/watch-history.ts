// A bounded log of watch events for one resource, so a watch can resume from a recent
// resourceVersion and gets 410 Expired (as kube-apiserver's watch cache answers) once the
// events it needs have been dropped.
import { badRequest, expired } from '../core/status.js';
import type { WatchEvent } from '../core/types.js';

type Listener = (event: WatchEvent, resourceVersion: string) => void;

interface Entry {
  rv: number;
  event: WatchEvent;
}

export class WatchHistory {
  private entries: Entry[] = [];
  /** Highest resourceVersion whose event is no longer kept (0: nothing dropped yet). */
  private droppedThrough = 0;
  private readonly listeners = new Set<Listener>();

  constructor(
    private limit: number,
    private readonly onListenerError: (err: unknown) => void = () => {},
  ) {}

  append(rv: number, event: WatchEvent): void {
    this.entries.push({ rv, event });
    // Trim in batches so a steady stream costs amortised O(1) per event.
    if (this.entries.length > this.limit + Math.ceil(this.limit / 4)) {
      const drop = this.entries.length - this.limit;
      this.droppedThrough = this.entries[drop - 1]?.rv ?? this.droppedThrough;
      this.entries.splice(0, drop);
    }
    for (const listener of this.listeners) this.deliver(listener, rv, event);
  }

  /**
   * Replay the events after `resourceVersion` (synchronously, before returning), then deliver
   * live ones. An empty resourceVersion means "live events only".
   */
  subscribe(resourceVersion: string, listener: Listener): () => void {
    if (resourceVersion !== '') {
      if (!/^\d+$/.test(resourceVersion)) {
        throw badRequest(`invalid resource version "${resourceVersion}"`);
      }
      const from = Number(resourceVersion);
      if (from < this.droppedThrough) {
        throw expired(`too old resource version: ${from} (${this.droppedThrough})`);
      }
      for (const e of this.entries) if (e.rv > from) this.deliver(listener, e.rv, e.event);
    }
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Grow (never shrink) the kept history, e.g. to hold two full updates of a large resource. */
  ensureCapacity(events: number): void {
    this.limit = Math.max(this.limit, events);
  }

  get size(): number {
    return this.entries.length;
  }

  private deliver(listener: Listener, rv: number, event: WatchEvent): void {
    try {
      listener(event, String(rv));
    } catch (err) {
      this.onListenerError(err);
    }
  }
}
