// tls.inject: the caBundles of objects annex does not own (a CRD's conversion webhook, a
// user's webhook configuration) kept equal to annex's CA.
import { hasTargets, injectWithClient } from '../certs/inject.js';
import type { Config } from '../config/load.js';
import { UserError } from '../errors.js';
import type { connectKube } from '../kube/connect.js';
import type { WorkQueue } from '../kube/workqueue.js';
import type { Logger } from '../log.js';

/**
 * Keeps the configured caBundles equal to annex's CA (tls.inject), tried once at start and
 * on each certificate change. A failed try (a target not there yet, as a CRD applied after
 * annex, or the API server down) is retried on the work queue with its backoff, never a
 * reason to exit: annex not serving is what would keep the API server's calls failing.
 * A no-op when no targets are configured.
 */
export function caInjector(
  config: Config,
  kube: ReturnType<typeof connectKube>,
  queue: WorkQueue,
  log: Logger,
) {
  const targets = config.tls.inject;
  if (!hasTargets(targets)) return async (_ca?: string) => {};
  if (!kube)
    throw new UserError('tls.inject needs an API server: set kube.kubeconfig or run in a cluster');
  let ca = '';
  let lastError = '';
  const inject = async () => {
    const done = await injectWithClient(kube, Buffer.from(ca).toString('base64'), targets);
    lastError = '';
    for (const d of done)
      log.info({ kind: d.kind, name: d.name, changed: d.changed }, 'caBundle injected');
  };
  const failed = (e: Error, retryInMs?: number) => {
    // Once per distinct error: a target missing for minutes is one line, not one a try.
    if (e.message !== lastError)
      log.error(
        { error: e.message, retryInMs },
        'caBundle injection failed (tls.inject); retrying',
      );
    lastError = e.message;
  };
  const q = queue.writer('inject', { handle: inject, onError: (_key, e, ms) => failed(e, ms) });
  return async (next?: string) => {
    if (!next) throw new UserError(`tls.inject is set but ${config.tls.dir} has no ca.crt`);
    ca = next;
    try {
      await inject();
      q.forget('ca');
    } catch (e) {
      failed(e as Error);
      q.add('ca');
    }
  };
}
