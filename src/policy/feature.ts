// AdmissionPolicies, live: wires the shared state, the webhooks that answer with the pure
// engine (webhooks.ts), the controller that watches and writes (controller.ts), and what
// a decision leaves behind: an AdmissionEvent in the decision log (`audit.annex.dev`,
// merged across replicas) and a Kubernetes Event, for every Deny/Warn/Audit decision of a
// review from the API server (ReviewContext.authenticated). Without an API server (a
// laptop `npm start`), the policies come from `policy.directory`.
import { hostname } from 'node:os';
import type { AdmissionRequest } from '../admission/review.js';
import type { Provider } from '../core/types.js';
import type { Feature, FeatureEvents } from '../core/feature.js';
import type { Logger } from '../log.js';
import type { PolicyConfig } from './config.js';
import { BackgroundScanner } from './background.js';
import { PolicyController } from './controller.js';
import { admissionEventsGroup, DecisionLog } from './decision-log.js';
import { eventFor } from './recording.js';
import { FALLBACK_REPORT_GROUP, policyReportGroup, REPORT_GROUP } from './report.js';
import { endpointSlicePeers, ReplicaView } from './replicas.js';
import { policyState } from './state.js';
import type { PolicyDecision } from './types.js';
import { policyWebhooks } from './webhooks.js';

export { POLICY_CONFIGURATION, POLICY_WEBHOOK } from './webhooks.js';

/**
 * Where this replica of annex runs, from the server's own settings (tls.*, server.port): the
 * decision log dials the other replicas as the Service, with the serving certificate, and
 * the webhooks leave annex's namespace alone. Not the feature's to configure.
 */
export interface PolicyPlacement {
  /** The Service the replicas sit behind (tls.service) and its namespace (tls.namespace). */
  service: string;
  namespace: string;
  /** The port each replica listens on (server.port). */
  port: number;
  /**
   * This replica's serving material (tls.dir), read anew on each call: the peer fan-out's
   * client certificate and CA. Throws when none is readable.
   */
  serving(): { cert: string; key: string; ca?: string };
}

/** Built from its section (`policy:`, ./config.ts): its webhooks and groups depend on it. */
export function policyFeature(settings: PolicyConfig, at: PolicyPlacement): Feature {
  const instance = settings.instance || hostname();
  const state = policyState(at.namespace);
  const log = new DecisionLog({ maxEntries: settings.decisionLog.maxEntries, replica: instance });
  let flog: Logger | undefined;
  let events: FeatureEvents | undefined;

  // Where `kubectl get admissionevents` reads: this replica alone, or every replica.
  const { peers, discoverPeers, peerTimeoutMs } = settings.decisionLog;
  let findPeers: () => Promise<string[]> | string[] = () => peers;
  const view =
    peers.length || discoverPeers
      ? new ReplicaView({
          local: log.store,
          peers: () => findPeers(),
          tls: () => {
            const m = at.serving();
            return { ca: m.ca ?? '', cert: m.cert, key: m.key };
          },
          serverName: `${at.service}.${at.namespace}.svc`,
          timeoutMs: peerTimeoutMs,
          get log() {
            return flog!;
          },
        })
      : undefined;
  const provider: Provider = view ?? log.store;

  function record(decisions: PolicyDecision[], req: AdmissionRequest): void {
    const refused = decisions.some((d) => d.action === 'Deny');
    for (const d of decisions) {
      log.record(d, req);
      if (events && settings.events && !req.dryRun) {
        const { namespace, event } = eventFor(d, req, refused);
        events.record(namespace, event);
      }
    }
  }

  const webhooks = policyWebhooks(state, { annexNamespace: at.namespace, record });
  // Background scans (policy.reports): their reports under wgpolicyk8s.io, registered only
  // while no one else serves it (a shared group: Kyverno's CRDs), and always under annex's
  // own group, which kubectl prefers less (groupPriorityMinimum 100 against 1000).
  const scanner = settings.reports.enabled
    ? new BackgroundScanner(state, {
        annexNamespace: at.namespace,
        resyncSeconds: settings.reports.resyncSeconds,
      })
    : undefined;
  const reportGroups = scanner
    ? [
        policyReportGroup(scanner, REPORT_GROUP, true),
        policyReportGroup(scanner, FALLBACK_REPORT_GROUP, false),
      ]
    : [];
  const controller = new PolicyController(state, {
    native: settings.native,
    directory: settings.directory,
    annexNamespace: at.namespace,
    servingCert: () => {
      try {
        return at.serving().cert;
      } catch {
        return ''; // None readable: no caBundle can be judged to verify it.
      }
    },
    policiesChanged: () => scanner?.policiesChanged(),
    ...(scanner ? { namespaceLabelsChanged: () => scanner.policiesChanged() } : {}),
  });

  return {
    name: 'policy',
    events: { instance },
    webhooks: [webhooks.mutating, webhooks.validating, webhooks.check],
    groups: [admissionEventsGroup(provider), ...reportGroups],
    peer: { decisions: () => ({ replica: instance, items: log.items() }) },
    start: (ctx) => {
      flog = ctx.log;
      const k = ctx.kube;
      events = ctx.events; // annex.dev/policy; records nothing without an API server
      if (k && discoverPeers) {
        findPeers = endpointSlicePeers(k, {
          name: at.service,
          namespace: at.namespace,
          port: at.port,
        });
      }
      controller.start(ctx);
      if (k) scanner?.start(k, ctx.log);
    },
    stop: async () => {
      controller.stop();
      scanner?.stop();
      view?.stop(); // start.ts flushes the Events after this
    },
    ready: () => controller.ready(),
    report: () => [controller.report(), scanner?.report()].filter((r) => r).join('; ') || undefined,
  };
}
