// How late this process's timers have run: the machine's load, measured in the same run.
// A test that bounds the time of something decided by a timer in this process (a budget, a
// backoff) allows this much more, so that a busy machine cannot fail it, while a wrong
// budget or a missing reset still does. (Only this process: not for child processes or
// the API server.)
import { monitorEventLoopDelay } from 'node:perf_hooks';

const RESOLUTION_MS = 10;

export interface Lateness {
  /** Milliseconds this process's event loop has run late since it started being measured. */
  ms(): number;
  stop(): void;
}

export function lateness(): Lateness {
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  // The histogram holds each interval between its ticks; beyond the resolution is lateness.
  return {
    ms: () => (h.count ? (h.count * (h.mean - RESOLUTION_MS * 1e6)) / 1e6 : 0),
    stop: () => h.disable(),
  };
}
