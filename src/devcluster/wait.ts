// `kubectl wait --for=condition=…` that tolerates a freshly created object. kubectl fails at
// once when the object does not exist yet (NotFound, "no matching resources found") or has
// no conditions yet: for a new CRD, whose `status.conditions` is still null, it answers
// `.status.conditions accessor error: <nil> is of the type <nil>`. Each attempt is kubectl's
// own watch, so the wait stays event-driven; a failed attempt is retried until the deadline.
import type { Kubectl } from './wire.js';

const RETRY_MS = 250;

/**
 * Waits until every object in `targets` (kubectl wait's arguments: `crd/x`, or `apiservice
 * -l app=y`) has condition `condition` True; resolves with kubectl's "condition met" lines.
 * Rejects after `timeoutMs` with kubectl's last answer.
 */
export async function waitForCondition(
  kubectl: Kubectl,
  targets: string[],
  condition: string,
  timeoutMs = 60_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const leftS = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
    try {
      return await kubectl([
        'wait',
        `--for=condition=${condition}`,
        ...targets,
        `--timeout=${leftS}s`,
      ]);
    } catch (e) {
      if (Date.now() + RETRY_MS >= deadline) {
        const last = e instanceof Error ? e.message.trim() : String(e);
        throw new Error(
          `${targets.join(' ')}: condition ${condition} not met within ${timeoutMs} ms (${last})`,
        );
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}
