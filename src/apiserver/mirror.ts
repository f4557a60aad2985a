// Keeps an ObjectStore equal to a view of objects the API server holds: list, then watch
// (re-listing on 410), mapping each object through `view` (undefined drops it). The
// building block of a read-only aggregated resource computed from built-in ones.
import { ObjectStore } from './object-store.js';
import type { KubeObject } from '../core/types.js';
import type { KubeClient, Query } from '../kube/client.js';
import { startWatch } from '../kube/reflector.js';

export interface Mirror {
  /** True once the first list has been applied. */
  synced(): boolean;
  stop(): void;
}

export function mirror<T extends KubeObject>(
  kube: KubeClient,
  path: string,
  store: ObjectStore,
  view: (object: T) => KubeObject | undefined,
  opts: { query?: Query; onError?: (err: Error) => void } = {},
): Mirror {
  let synced = false;
  const stop = startWatch<T>(
    kube,
    path,
    opts.query ? { query: opts.query } : {},
    (e) => {
      if (e.type === 'RELISTED') {
        store.replace(e.items.map(view).filter((o): o is KubeObject => o !== undefined));
        synced = true;
      } else if (e.type === 'DELETED') {
        store.delete(e.object.metadata.namespace, e.object.metadata.name);
      } else if (e.type !== 'BOOKMARK') {
        const o = view(e.object);
        if (o) store.set(o);
        else store.delete(e.object.metadata.namespace, e.object.metadata.name);
      }
    },
    opts.onError ?? (() => {}),
  );
  return { synced: () => synced, stop };
}
