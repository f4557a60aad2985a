// The composition root: configuration and features in, a listening annex out. Everything
// the server needs is built here once and passed down; nothing below reads globals or env,
// and nothing here knows one feature from another.
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { startSharedCertificates, type SharedCertificates } from '../certs/shared.js';
import { delegatedAuth, type DelegatedAuth } from '../apiserver/auth/index.js';
import {
  ensureCertificates,
  loadServingMaterial,
  watchServingMaterial,
  type ServingMaterial,
} from '../certs/index.js';
import { featureConfigs } from '../config/features.js';
import { loadConfig, type Config, type ConfigOverrides } from '../config/load.js';
import { DEFAULT_SHUTDOWN_DELAY_SECONDS } from '../config/schema.js';
import { UserError } from '../errors.js';
import { connectKube } from '../kube/connect.js';
import { kubeEventSink } from '../kube/events.js';
import { createLogger, type Logger } from '../log.js';
import { parsePemBundle } from '../apiserver/auth/x509.js';
import { WorkQueue } from '../kube/workqueue.js';
import type { Registrar } from '../manifests/register.js';
import { declarationsOf } from '../manifests/render.js';
import { createApp } from './app.js';
import { caInjector } from './ca-inject.js';
import { startRegistration } from './registration.js';
import type { Readiness } from './health.js';
import { admissionClientCa } from './admission-ca.js';
import { builtinFeatures } from './builtins.js';
import { validateFeatures, type Feature } from '../core/feature.js';
import { featureEvents, type FeatureEventsHandle } from './feature-events.js';
import { loadFeatureModules } from './load-features.js';
import { listen, type Listening, type TlsMaterial } from './listen.js';
import { reviewCallers } from './review-callers.js';

export interface Annex {
  url: string;
  port: number;
  listening: Listening;
  features: Feature[];
  /** With registration.apply: what annex has registered so far. */
  registrar: Registrar | null;
  /**
   * What SIGTERM does, as k8s.io/apiserver does it: /readyz turns 503 at once, serving
   * goes on for server.shutdownDelaySeconds (endpoints and the API server stop sending),
   * then close().
   */
  shutdown(): Promise<void>;
  /**
   * Stops accepting, GOAWAY / Connection: close, ends open watches, waits for in-flight
   * requests (and idle keep-alive connections' next one) up to
   * server.shutdownTimeoutSeconds, then stops the features.
   */
  close(): Promise<void>;
}

/**
 * Starts annex with the features the configuration switches on, the modules it names
 * (`features:`), and `extra` ones: certificates first, then the features, then the port.
 */
export async function startAnnex(
  config: Config,
  log: Logger,
  extra: Feature[] = [],
): Promise<Annex> {
  // The user's modules first: one that does not load or collides is refused before
  // anything is written or started.
  const features = [
    ...builtinFeatures(config),
    ...extra,
    ...(await loadFeatureModules(config.features)),
  ];
  validateFeatures(features);
  // Each feature's own section (featureConfig.<name>), refused like any bad setting.
  const configs = featureConfigs(config, features);
  const kube = connectKube(config.kube);
  // Every write annex makes to the API server goes through this one queue (kube/workqueue.ts).
  const queue = new WorkQueue();
  const shared = await sharedCertificates(config, kube, queue, log);
  if (!shared) await prepareCertificates(config.tls, log);
  let serving: ServingMaterial;
  try {
    serving = loadServingMaterial(config.tls.dir);
  } catch (e) {
    shared?.stop();
    throw new UserError(`cannot load TLS material: ${(e as Error).message}`);
  }

  const webhookClientCa = admissionClientCa(config.admission.clientCA, {
    required: config.admission.requireClientCert,
    log,
  });
  const callers = reviewCallers(webhookClientCa);
  if (config.registration.apply && !kube)
    throw new UserError(
      'registration.apply needs an API server: set kube.kubeconfig or run in a cluster',
    );
  if (config.registration.apply && !serving.ca)
    throw new UserError(
      `registration.apply needs a CA to register: ${config.tls.dir} has no ca.crt`,
    );
  const injectCa = caInjector(config, kube, queue, log);
  await injectCa(serving.ca);
  const { webhooks, conversions, groups } = declarationsOf(features);
  const auth = await startAuth(config, kube, groups.length > 0, log);
  const started: Feature[] = [];
  const eventSink = kube && kubeEventSink(kube);
  const recorders: FeatureEventsHandle[] = [];
  /** Stops what started, last first; then its Events are flushed; then the clients it used. */
  const teardown = async () => {
    for (const f of started.reverse()) await f.stop?.();
    for (const r of recorders) await r.stop();
    auth?.stop();
    webhookClientCa.stop();
    shared?.stop();
    await queue.shutDown();
    kube?.close();
  };
  // The registrar starts once annex listens; a feature may change its declarations before.
  let registrar: Registrar | null = null;
  const reactive = new Set<string>();
  try {
    for (const f of features) {
      const flog = log.child({ feature: f.name });
      const events = featureEvents(f, { sink: eventSink, queue, log: flog });
      recorders.push(events);
      await f.start?.({
        config: configs.get(f.name),
        kube,
        log: flog,
        queue,
        events: events.events,
        registrationsChanged: () => {
          reactive.add(f.name);
          registrar?.changed(f.name);
        },
      });
      started.push(f);
    }
  } catch (e) {
    await teardown();
    throw new UserError(
      `feature "${features[started.length]?.name}" failed to start: ${(e as Error).message}`,
    );
  }

  let shuttingDown = false;
  /** Set once registration starts, when a shared group is declared (manifests/ownership.ts). */
  let sharedGroupsReport: (() => string) | null = null;
  const readiness: Readiness = () => [
    ...features.map((f): [string, true | string, string?] => {
      const note = f.report?.();
      return note ? [f.name, f.ready?.() ?? true, note] : [f.name, f.ready?.() ?? true];
    }),
    // Never a failure: a group another project serves is theirs, not a fault of this replica.
    ...(sharedGroupsReport
      ? [['shared-groups', true, sharedGroupsReport() || undefined] as [string, true, string]]
      : []),
    // Never a failure: unready, annex would not be registered, and no caller could fix it.
    ...(webhooks.length
      ? [['admission-callers', true, callers.report()] as [string, true, string]]
      : []),
    ['shutdown', shuttingDown ? 'annex is shutting down' : true],
  ];
  // Aborted when the drain starts: watches end cleanly rather than being reset.
  const stopWatches = new AbortController();
  // Every open watch listens for it: hundreds are normal, not the leak Node warns of past 10.
  setMaxListeners(0, stopWatches.signal);
  // Offered in the TLS CertificateRequest, so clients pick a certificate these CAs issued.
  const tls = (): TlsMaterial => ({
    ...serving,
    clientCAs: [
      ...(auth?.config.clientCAs() ?? []),
      ...webhookClientCa.certs().map((c) => c.toString()),
      ...(serving.ca ? [serving.ca] : []),
    ],
  });
  // Parsed once per CA text: serving material reloads swap the string.
  let caCache: [string, ReturnType<typeof parsePemBundle>] = ['', []];
  const annexCa = () => {
    const pem = serving.ca ?? '';
    if (caCache[0] !== pem) caCache = [pem, pem ? parsePemBundle(pem) : []];
    return caCache[1];
  };
  const app = createApp({
    log,
    readiness,
    webhooks,
    conversions,
    groups,
    features,
    annexCa,
    reviewCallers: callers,
    requireClientCert: config.admission.requireClientCert,
    auth,
    trustLoopback: isLoopback(config.server.host),
    stopWatches: stopWatches.signal,
    maxReviewBytesInFlight: config.admission.maxInFlightBytes,
    maxInFlight: config.server.maxInFlight,
  });
  const listening = await listenOrExplain(app, config, tls()).catch(async (e: unknown) => {
    await teardown();
    throw e;
  });
  const stopAuthWatch = auth?.config.onChange(() => listening.updateTls(tls()));
  webhookClientCa.onChange(() => listening.updateTls(tls()));
  const stopCertWatch = watchServingMaterial(
    config.tls.dir,
    (m) => {
      serving = m;
      listening.updateTls(tls());
      void injectCa(m.ca).catch((e: Error) =>
        log.error({ error: e.message }, 'caBundle injection failed (tls.inject)'),
      );
      log.info({ dir: config.tls.dir }, 'reloaded serving certificate');
    },
    (err) =>
      log.error(
        { dir: config.tls.dir, error: err.message },
        'ignored invalid certificate update; still serving the previous one',
      ),
  );
  log.info({ url: listening.url }, 'annex is serving');
  const registration = startRegistration(
    config,
    kube,
    features,
    reactive,
    () => serving.ca,
    () => shuttingDown,
    queue,
    log,
  );
  registrar = registration;
  sharedGroupsReport = registration?.report ?? null;
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      shuttingDown = true;
      const draining = listening.close();
      stopWatches.abort();
      const open = listening.connections().open;
      log.info({ open, timeoutSeconds: config.server.shutdownTimeoutSeconds }, 'draining');
      // Connections the deadline had to destroy: an idle one is a keep-alive socket whose
      // client sent nothing during the whole drain.
      log.info({ destroyedAtDeadline: await draining }, 'drained');
      registrar?.stop();
      stopCertWatch();
      stopAuthWatch?.();
      await teardown();
    })());
  return {
    url: listening.url,
    port: listening.port,
    listening,
    features,
    registrar,
    shutdown: async () => {
      shuttingDown = true;
      // The delay lets the API server and the Service's endpoints stop sending; with no API
      // server (a laptop's `npm start`) nothing routes by readiness: no wait unless asked for.
      const delaySeconds =
        config.server.shutdownDelaySeconds ?? (kube ? DEFAULT_SHUTDOWN_DELAY_SECONDS : 0);
      log.info({ delaySeconds }, 'shutting down: /readyz is 503, still serving');
      await new Promise((r) => setTimeout(r, delaySeconds * 1000));
      await close();
    },
    close,
  };
}

/** tls.secret: the replicas' one CA, from the Secret (see certs/shared.ts); else null. */
async function sharedCertificates(
  config: Config,
  kube: ReturnType<typeof connectKube>,
  queue: WorkQueue,
  log: Logger,
): Promise<SharedCertificates | null> {
  const t = config.tls;
  if (!t.secret) return null;
  if (!kube)
    throw new UserError('tls.secret needs an API server: set kube.kubeconfig or run in a cluster');
  try {
    return await startSharedCertificates({
      kube,
      namespace: t.namespace,
      name: t.secret,
      dir: t.dir,
      identity: `${hostname()}-${randomBytes(4).toString('hex')}`,
      service: t.service,
      serviceNamespace: t.namespace,
      dnsNames: t.dnsNames,
      ipAddresses: t.ipAddresses,
      syncIntervalMs: t.syncIntervalSeconds * 1000,
      overlapMs: t.overlapSeconds * 1000,
      queue,
      log: log.child({ component: 'shared-certs' }),
    });
  } catch (e) {
    throw new UserError(`tls.secret ${t.namespace}/${t.secret}: ${(e as Error).message}`);
  }
}

async function prepareCertificates(tls: Config['tls'], log: Logger): Promise<void> {
  if (!tls.generate) return;
  const r = await ensureCertificates({
    dir: tls.dir,
    service: tls.service,
    namespace: tls.namespace,
    dnsNames: tls.dnsNames,
    ipAddresses: tls.ipAddresses,
  });
  if (r.issuedCa || r.issuedLeaf) {
    log.info(
      { dir: tls.dir, issuedCa: r.issuedCa, issuedLeaf: r.issuedLeaf },
      'generated certificates',
    );
  }
}

/**
 * Every request past the webhooks (/metrics, the aggregated API) is authenticated and
 * authorized by the API server annex extends. With no API server at all (a laptop `npm
 * start`), annex serves groups unauthenticated, but only on a loopback address, and says so.
 */
async function startAuth(
  config: Config,
  kube: ReturnType<typeof connectKube>,
  servesGroups: boolean,
  log: Logger,
): Promise<DelegatedAuth | null> {
  if (kube) {
    const auth = delegatedAuth({ client: kube, log });
    await auth.start();
    return auth;
  }
  if (!servesGroups) return null;
  if (!isLoopback(config.server.host)) {
    throw new UserError(
      `no API server to delegate authentication to (set kube.kubeconfig, or run in a cluster); refusing to serve the aggregated API unauthenticated on ${config.server.host} — use --host 127.0.0.1 for a local demo`,
    );
  }
  log.warn(
    { host: config.server.host },
    'standalone mode: no API server configured, the aggregated API is served without authentication on loopback only',
  );
  return null;
}

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

async function listenOrExplain(
  app: Parameters<typeof listen>[0],
  config: Config,
  tls: TlsMaterial,
): Promise<Listening> {
  try {
    return await listen(app, { ...config.server, tls });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL') {
      throw new UserError(
        `cannot listen on ${config.server.host}:${config.server.port}: ${err.code} (set --port or server.port)`,
      );
    }
    throw e;
  }
}

export interface ServeOptions {
  /** A YAML configuration file, as `annex serve -c`. */
  configFile?: string;
  /** Settings over the file's (and the defaults). */
  config?: ConfigOverrides;
  /** The user's own features, served beside the built-in ones the configuration enables. */
  features?: Feature[];
  log?: Logger;
}

/** The public entry point: `await serve({ features: [mine] })`. */
export async function serve(opts: ServeOptions = {}): Promise<Annex> {
  const config = loadConfig({
    ...(opts.configFile ? { file: opts.configFile } : {}),
    ...(opts.config ? { overrides: opts.config } : {}),
  });
  return startAnnex(config, opts.log ?? createLogger(config.log.level), opts.features ?? []);
}
