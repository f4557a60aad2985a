// `ctx.events`: each feature's Event recorder, built here so that no feature builds one from
// src/kube itself. One recorder per feature, made on its first Event (a feature that records
// none registers nothing on the queue), writing through the process's work queue; flushed
// and stopped by the composition root after the feature stops.
import { hostname } from 'node:os';
import type { Feature, FeatureEvents } from '../core/feature.js';
import { EventRecorder, type EventSink } from '../kube/events.js';
import type { WorkQueue } from '../kube/workqueue.js';
import type { Logger } from '../log.js';

/** The name part of a Kubernetes qualified name (what reportingController must be). */
const QUALIFIED_NAME_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/**
 * reportingController: `annex.dev/<feature>` when the feature's name may be the name part of
 * a qualified name (the API server validates it so), else `annex.dev/annex`.
 */
export const eventController = (feature: string): string =>
  `annex.dev/${QUALIFIED_NAME_PART.test(feature) ? feature : 'annex'}`;

export interface FeatureEventsHandle {
  events: FeatureEvents;
  /** Waits for the writes in flight, then drops what is left (the feature has stopped). */
  stop(): Promise<void>;
}

/** The feature's `ctx.events`; with no sink (no API server) it records nothing. */
export function featureEvents(
  feature: Pick<Feature, 'name' | 'events'>,
  opts: { sink: EventSink | null; queue: WorkQueue; log: Logger },
): FeatureEventsHandle {
  const { sink, queue, log } = opts;
  let recorder: EventRecorder | undefined;
  let stopped = false;
  const make = (s: EventSink) => {
    const o = feature.events ?? {};
    return new EventRecorder({
      sink: s,
      queue,
      queueKind: `event/feature/${feature.name}`,
      controller: eventController(feature.name),
      instance: o.instance || hostname(),
      ...(o.windowMs !== undefined ? { windowMs: o.windowMs } : {}),
      ...(o.burst !== undefined ? { burst: o.burst } : {}),
      ...(o.refillMs !== undefined ? { refillMs: o.refillMs } : {}),
      ...(o.maxEntries !== undefined ? { maxEntries: o.maxEntries } : {}),
      onError: (e, ev, retryInMs) =>
        log.warn(
          { error: e.message, action: ev.action, regarding: ev.regarding.name, retryInMs },
          retryInMs === undefined ? 'event not written' : 'event not written; retrying',
        ),
    });
  };
  return {
    events: {
      record: (namespace, event) => {
        if (!sink || stopped) return;
        (recorder ??= make(sink)).record(namespace, event);
      },
    },
    stop: async () => {
      stopped = true;
      await recorder?.idle();
      recorder?.stop();
    },
  };
}
