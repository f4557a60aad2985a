// AdmissionPolicies, live: wires the shared state, the webhooks that answer with the pure
// engine (webhooks.ts), the controller that watches and writes (controller.ts), and what
// a decision leaves behind: an AdmissionEvent in the decision log (`audit.annex.dev`,
// merged across replicas) and a Kubernetes Event, for every Deny/Warn/Audit decision of a
// review from the API server (ReviewContext.authenticated). Without an API server (a
// laptop `npm start`), the policies come from `policy.directory`.
import { hostname } from 'node:os';
import type { AdmissionRequest } from '../admission/review.js';
import { loadServingMaterial } from '../certs/index.js';
import type { Config } from '../config/load.js';
import type { Provider } from '../core/types.js';
import type { Feature, FeatureEvents } from '../core/feature.js';
import type { Logger } from '../log.js';
import { PolicyController } from './controller.js';
import { admissionEventsGroup, DecisionLog } from './decision-log.js';
import { eventFor } from './recording.js';
import { endpointSlicePeers, ReplicaView } from './replicas.js';
import { policyState } from './state.js';
import type { PolicyDecision } from './types.js';
import { policyWebhooks } from './webhooks.js';

export { POLICY_CONFIGURATION, POLICY_WEBHOOK } from './webhooks.js';

export function policyFeature(config: Config): Feature {
  const settings = config.policy;
  const instance = settings.instance || hostname();
  const state = policyState();
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
            const m = loadServingMaterial(config.tls.dir);
            return { ca: m.ca ?? '', cert: m.cert, key: m.key };
          },
          serverName: `${config.tls.service}.${config.tls.namespace}.svc`,
          timeoutMs: peerTimeoutMs,
          get log() {
            return flog!;
          },
        })
      : undefined;
  const provider: Provider = view ?? log.store;

  function record(decisions: PolicyDecision[], req: AdmissionRequest): void {
    for (const d of decisions) {
      log.record(d, req);
      if (events && settings.events && !req.dryRun) {
        const { namespace, event } = eventFor(d, req);
        events.record(namespace, event);
      }
    }
  }

  const webhooks = policyWebhooks(state, { annexNamespace: config.tls.namespace, record });
  const controller = new PolicyController(state, {
    native: settings.native,
    directory: settings.directory,
    annexNamespace: config.tls.namespace,
    servingCert: () => {
      try {
        return loadServingMaterial(config.tls.dir).cert;
      } catch {
        return ''; // None readable: no caBundle can be judged to verify it.
      }
    },
  });

  return {
    name: 'policy',
    events: { instance },
    webhooks: [webhooks.mutating, webhooks.validating, webhooks.check],
    groups: [admissionEventsGroup(provider)],
    peer: { decisions: () => ({ replica: instance, items: log.items() }) },
    start: (ctx) => {
      flog = ctx.log;
      const k = ctx.kube;
      events = ctx.events; // annex.dev/policy; records nothing without an API server
      if (k && discoverPeers) {
        const service = {
          name: config.tls.service,
          namespace: config.tls.namespace,
          port: config.server.port,
        };
        findPeers = endpointSlicePeers(k, service);
      }
      controller.start(ctx);
    },
    stop: async () => {
      controller.stop();
      view?.stop(); // start.ts flushes the Events after this
    },
    ready: () => controller.ready(),
    report: () => controller.report(),
  };
}
