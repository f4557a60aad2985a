// Retries for the review calls, in the spirit of DefaultAuthWebhookRetryBackoff (500 ms
// × 1.5 with jitter) but shorter: a request waits on these, so three tries at most.
import { KubeApiError } from '../../kube/errors.js';

/** Network failures, 429 and 5xx are worth another try; a 4xx answer will not change. */
export function retriable(err: unknown): boolean {
  if (err instanceof KubeApiError) return err.code === 429 || err.code >= 500;
  return true;
}

export async function withRetry<T>(
  fn: () => Promise<T>,
  opts: { attempts?: number; initialMs?: number } = {},
): Promise<T> {
  const attempts = opts.attempts ?? 3;
  let delay = opts.initialMs ?? 500;
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if (i >= attempts || !retriable(err)) throw err;
      await new Promise((r) => setTimeout(r, delay * (0.8 + Math.random() * 0.4)));
      delay *= 1.5;
    }
  }
}
