// AdmissionPolicies, live: list + watch them through the API server, compile each once per
// generation, report `Ready` and `Enforced` conditions (Enforced from the enforcing objects as
// observed in the API server), declare the policy webhooks' `rules` as the union of what the
// policies match (annex's registrar applies them: FeatureContext.registrationsChanged), answer
// those webhooks with the pure evaluator, and record every Deny/Warn/Audit decision of a
// review from the API server (ReviewContext.authenticated) as an AdmissionEvent and a
// Kubernetes Event. A validating webhook on AdmissionPolicy objects
// refuses one that does not compile, with compilePolicy's message. Without an API server
// (a laptop `npm start`), the policies come from `policy.directory`.
import { hostname } from 'node:os';
import type { AdmissionRequest } from '../admission/review.js';
import { allow, deny } from '../admission/verdict.js';
import {
  validatingWebhook,
  type ReviewContext,
  type RuleWithOperations,
  type Webhook,
} from '../admission/webhook.js';
import type { Provider } from '../core/types.js';
import { loadServingMaterial } from '../certs/index.js';
import { loadPolicies } from './load.js';
import type { Config } from '../config/load.js';
import type { KubeClient } from '../kube/client.js';
import { setCondition } from '../core/conditions.js';
import { KubeApiError } from '../kube/client.js';
import { EventRecorder, kubeEventSink } from '../kube/events.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import type { Feature, WorkQueue, WriterQueue } from '../core/feature.js';
import { celObjects, recordsAudit, syncCel, webhookPolicies } from './cel/apply.js';
import { celStatus, type CelObjects } from './cel/compile.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { admissionEventsGroup, DecisionLog } from './decision-log.js';
import type { EvaluateContext } from './evaluate.js';
import { decide, mutateWith, PolicySet, sameRules, unionRules, type Compiled } from './engine.js';
import {
  summary,
  webhookEnforcement,
  type Enforcement,
  type Observed,
  type ObservedWebhook,
} from './status.js';
import { eventFor } from './recording.js';
import { endpointSlicePeers, ReplicaView } from './replicas.js';
import {
  POLICY_GROUP,
  POLICY_KIND,
  POLICY_PLURAL,
  POLICY_VERSION,
  PolicyCompileError,
  type AdmissionPolicy,
  type PolicyDecision,
} from './types.js';

type PolicyStatus = NonNullable<AdmissionPolicy['status']>;

export const POLICY_WEBHOOK = 'policies.annex.dev';
export const POLICY_CONFIGURATION = 'annex-policies';
const FIELD_MANAGER = 'annex';
const POLICIES_PATH = `/apis/${POLICY_GROUP}/${POLICY_VERSION}/${POLICY_PLURAL}`;
const CONFIG_PATHS = {
  ValidatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  MutatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
} as const;
type ConfigKind = keyof typeof CONFIG_PATHS;

/** A status as compared for "nothing to write": transition times aside. */
const statusKey = (s: PolicyStatus) =>
  JSON.stringify({
    ...s,
    conditions: (s.conditions ?? []).map(({ lastTransitionTime: _, ...rest }) => rest),
  });

const selectsNamespaces = (p: CompiledPolicy) =>
  !!(p.match.namespaceSelector || p.exclude?.namespaceSelector);

const registration = (extra: object = {}) => ({
  name: POLICY_WEBHOOK,
  // The union of the policies' rules, kept current at run time (none until one is ready).
  rules: [] as RuleWithOperations[],
  failurePolicy: 'Fail' as const,
  // Decisions become Events, which a dry run must not write.
  sideEffects: 'NoneOnDryRun' as const,
  timeoutSeconds: 5,
  ...extra,
});

export function policyFeature(config: Config): Feature {
  const settings = config.policy;
  const instance = settings.instance || hostname();
  const set = new PolicySet();
  const log = new DecisionLog({ maxEntries: settings.decisionLog.maxEntries, replica: instance });
  const namespaceLabels = new Map<string, Record<string, string>>();
  /**
   * The request's namespace labels from the watch. One it has not delivered yet (just
   * created, or the watch is behind) is read from the API server when a policy's selector
   * needs it, as the API server's own namespace matcher does; if that read fails, the
   * review fails, and the webhook's failurePolicy (Fail) refuses the request rather than
   * match it against no labels. The review's deadline bounds the evaluation.
   */
  const matchCtx = async (
    req: AdmissionRequest,
    review: ReviewContext,
  ): Promise<EvaluateContext> => {
    const ctx: EvaluateContext = {
      annexNamespace: config.tls.namespace,
      deadline: review.deadline,
      pace: { slowestRuleMs: 0 },
    };
    if (!req.namespace) return ctx;
    let labels = namespaceLabels.get(req.namespace);
    if (!labels && kube && onWebhook.some(selectsNamespaces)) {
      const ns = await kube.get<{ metadata?: { labels?: Record<string, string> } }>(
        `/api/v1/namespaces/${encodeURIComponent(req.namespace)}`,
      );
      labels = ns.metadata?.labels ?? {};
    }
    return labels ? { ...ctx, namespaceLabels: labels } : ctx;
  };

  let kube: KubeClient | null = null;
  let flog: Logger | undefined;
  let recorder: EventRecorder | undefined;
  let listed = false;
  let listError = '';
  const stops: (() => void)[] = [];

  // Where `kubectl get admissionevents` reads: this replica alone, or every replica.
  const { peers, discoverPeers, peerTimeoutMs } = settings.decisionLog;
  const service = {
    name: config.tls.service,
    namespace: config.tls.namespace,
    port: config.server.port,
  };
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
      if (recorder && !req.dryRun) {
        const { namespace, event } = eventFor(d, req);
        recorder.record(namespace, event);
      }
    }
  }

  const validating: Webhook = {
    name: 'policies',
    type: 'validating',
    configuration: POLICY_CONFIGURATION,
    description:
      "annex's AdmissionPolicies (policy.annex.dev): Deny, Warn and Audit. annex keeps `rules` equal to what the policies match.",
    registrations: [registration()],
    admit: async (req, review) => {
      const { verdict, decisions } = decide(onWebhook, req, await matchCtx(req, review));
      // Only the API server's reviews: anyone else could forge the userInfo and the object.
      if (review.authenticated) record(decisions, req);
      return verdict;
    },
  };
  const mutating: Webhook = {
    name: 'policies',
    type: 'mutating',
    configuration: POLICY_CONFIGURATION,
    description:
      "annex's AdmissionPolicies (policy.annex.dev): mutate rules. annex keeps `rules` equal to what the policies match.",
    registrations: [registration({ reinvocationPolicy: 'Never' })],
    admit: async (req, review) => mutateWith(onWebhook, req, await matchCtx(req, review)),
  };
  const check = validatingWebhook({
    name: 'admissionpolicies.annex.dev',
    description: 'Refuses an AdmissionPolicy that does not compile, naming the rule and the fault.',
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [POLICY_GROUP],
        apiVersions: ['*'],
        resources: [POLICY_PLURAL],
        scope: 'Cluster',
      },
    ],
    failurePolicy: 'Fail',
    admit: (req) => {
      try {
        compilePolicy(req.object);
        return allow();
      } catch (e) {
        if (e instanceof PolicyCompileError) return deny(e.message, 422);
        throw e;
      }
    },
  });

  // What the API server enforces itself (compiled to CEL), and what is left to the webhook.
  let native = new Map<string, CelObjects>();
  let onWebhook: readonly CompiledPolicy[] = [];
  const celOpts = { annexNamespace: config.tls.namespace };
  const nativeCandidate = (p: CompiledPolicy) =>
    settings.native && kube !== null && !recordsAudit(p);
  function plan(): void {
    native = celObjects(set.policies.filter(nativeCandidate), celOpts);
    onWebhook = webhookPolicies(set.policies, native);
  }
  function enforcement(p: CompiledPolicy): Pick<PolicyStatus, 'enforcedBy' | 'webhookReason'> {
    if (!nativeCandidate(p)) {
      const why = !settings.native
        ? 'policy.native is off'
        : 'Audit decisions are recorded by annex';
      return { enforcedBy: 'webhook', webhookReason: why };
    }
    const s = celStatus(p, celOpts);
    return s.enforcedBy === 'webhook'
      ? { enforcedBy: 'webhook', webhookReason: s.reason ?? '' }
      : { enforcedBy: 'ValidatingAdmissionPolicy' };
  }

  /** What the API server must still send annex: the union of the webhook-side policies' rules. */
  const webhookRules = () => unionRules(onWebhook.flatMap((p) => p.rules));

  // The registrar is the one writer of annex-policies: the rules are a declaration it
  // re-renders when told (FeatureContext.registrationsChanged).
  let registrationsChanged = () => {};
  let declared = '';
  function syncRules(): void {
    plan();
    const rules = webhookRules();
    for (const w of [validating, mutating]) w.registrations[0]!.rules = rules;
    if (JSON.stringify(rules) !== declared) {
      declared = JSON.stringify(rules);
      registrationsChanged();
    }
    syncNative();
  }

  // This feature's writes, on the process's work queue: `policy/cel` (the CEL objects: they
  // are not registrations, so this feature applies them) and `policy/status/<name>`. The
  // queue runs one write per key at a time, a write asked for meanwhile once after, and
  // retries a failure with backoff until it holds.
  let writes: WriterQueue | undefined;
  let stopped = false;
  let nativeStored = new Map<string, string>();
  const syncNative = () => writes?.add('cel');
  async function applyNative(): Promise<void> {
    if (!kube || stopped) return;
    const want = new Map([...native].map(([name, o]) => [name, JSON.stringify(o)]));
    if (JSON.stringify([...want]) === JSON.stringify([...nativeStored])) return;
    await syncCel(kube, native);
    nativeStored = want;
    refreshStatuses();
  }

  // The policy webhook as the API server holds it (watched): what `Enforced` is judged on.
  const observed: Observed = {};
  const latest = new Map<string, AdmissionPolicy>();
  const written = new Map<string, string>();

  function onPolicy(obj: AdmissionPolicy): void {
    latest.set(obj.metadata.name, obj);
    const c = set.put(obj);
    if (c.error)
      flog?.warn({ policy: obj.metadata.name, error: c.error }, 'policy does not compile');
  }

  function servingCert(): string {
    try {
      return loadServingMaterial(config.tls.dir).cert;
    } catch {
      return ''; // None readable: no caBundle can be judged to verify it.
    }
  }

  /** Queues the status writes that would change what a policy holds. */
  function refreshStatuses(): void {
    if (!kube) return;
    const cert = servingCert();
    for (const obj of latest.values())
      if (desired(obj, set.put(obj), cert)) writes?.add(`status/${obj.metadata.name}`);
  }

  function enforced(c: Compiled, cert: string): Enforcement {
    if (!c.policy)
      return { status: 'False', reason: 'NotReady', message: 'the policy does not compile' };
    const p = c.policy;
    const cel = native.get(p.name);
    if (!cel) return webhookEnforcement(p, observed, cert, POLICY_CONFIGURATION);
    const names = [cel.vap, cel.binding, cel.map, cel.mapBinding]
      .filter((o) => o !== undefined)
      .map((o) => `${o.kind as string} ${(o.metadata as { name: string }).name}`)
      .join(', ');
    // The apply's answer is the object as the API server stored it.
    return nativeStored.get(p.name) === JSON.stringify(cel)
      ? {
          status: 'True',
          reason: 'AdmissionPolicyStored',
          message: `the API server holds ${names}`,
        }
      : {
          status: 'False',
          reason: 'AdmissionPolicyPending',
          message: `not yet applied to the API server: ${names}`,
        };
  }

  /** Policies not (yet) enforced, by name, with the reason: /readyz?verbose says them. */
  const unenforced = new Map<string, string>();

  /**
   * The status `obj` should hold (and, for /readyz, whether it is enforced); undefined when
   * it holds it already or it was last written so.
   */
  function desired(obj: AdmissionPolicy, c: Compiled, cert: string): PolicyStatus | undefined {
    const generation = obj.metadata.generation;
    const gen = generation !== undefined ? { observedGeneration: generation } : {};
    const e = enforced(c, cert);
    if (e.status === 'True') unenforced.delete(obj.metadata.name);
    else unenforced.set(obj.metadata.name, e.reason);
    const conditions = [
      c.error
        ? {
            type: 'Ready',
            status: 'False' as const,
            reason: 'CompileError',
            message: c.error,
            ...gen,
          }
        : {
            type: 'Ready',
            status: 'True' as const,
            reason: 'Compiled',
            message: 'the policy compiled',
            ...gen,
          },
      { type: 'Enforced', ...e, ...gen },
    ];
    const now = new Date();
    const status: PolicyStatus = {
      ready: !c.error,
      ...(c.error ? { error: c.error } : {}),
      ...gen,
      ...(c.policy ? enforcement(c.policy) : {}),
      ...summary(obj),
      conditions: conditions
        .reduce((all, next) => setCondition(all, next, now), obj.status?.conditions ?? [])
        .filter((x) => x.type === 'Ready' || x.type === 'Enforced'),
    };
    // The same status (times aside) as last written or as the object holds: nothing to do.
    const key = statusKey(status);
    const held = obj.status ? statusKey(obj.status) : '';
    const name = obj.metadata.name;
    if (written.get(name) === key || held === key) return undefined;
    return status;
  }

  async function writeStatus(name: string): Promise<void> {
    const obj = latest.get(name);
    if (!kube || stopped || !obj) return;
    const status = desired(obj, set.put(obj), servingCert());
    if (!status) return;
    const key = statusKey(status);
    written.set(name, key);
    try {
      await kube.patch(
        `${POLICIES_PATH}/${encodeURIComponent(obj.metadata.name)}/status`,
        {
          apiVersion: `${POLICY_GROUP}/${POLICY_VERSION}`,
          kind: POLICY_KIND,
          metadata: { name: obj.metadata.name },
          status,
        },
        'apply',
        { fieldManager: FIELD_MANAGER, force: true },
      );
    } catch (e) {
      written.delete(name);
      // Gone meanwhile: nothing to write. Else (API server away, 403, 409, 422, 5xx) the
      // queue writes it again after a backoff.
      if (e instanceof KubeApiError && e.code === 404) return;
      throw e;
    }
  }

  function startCluster(k: KubeClient, l: Logger, queue: WorkQueue): void {
    writes = queue.writer('policy', {
      handle: (name) => (name === 'cel' ? applyNative() : writeStatus(name.slice(7))),
      onError: (name, e, retryInMs) =>
        name === 'cel'
          ? l.error(
              { error: e.message, retryInMs },
              'cannot apply the policies compiled to CEL; retrying',
            )
          : l.warn(
              { policy: name.slice(7), error: e.message, retryInMs },
              'status not written; retrying',
            ),
    });
    recorder = settings.events
      ? new EventRecorder({
          queue,
          sink: kubeEventSink(k),
          controller: 'annex.dev/policy',
          instance,
          onError: (e, ev, retryInMs) =>
            l.warn(
              { error: e.message, action: ev.action, regarding: ev.regarding.name, retryInMs },
              retryInMs === undefined ? 'event not written' : 'event not written; retrying',
            ),
        })
      : undefined;
    if (discoverPeers) findPeers = endpointSlicePeers(k, service);
    stops.push(
      startWatch<AdmissionPolicy>(
        k,
        POLICIES_PATH,
        {},
        (e) => {
          if (e.type === 'RELISTED') {
            set.replace(e.items);
            latest.clear();
            unenforced.clear();
            for (const o of e.items) onPolicy(o);
            listed = true;
            listError = '';
            l.info(
              { policies: e.items.length, ready: set.policies.length },
              'listed AdmissionPolicies',
            );
          } else if (e.type === 'DELETED') {
            set.delete(e.object.metadata.name);
            latest.delete(e.object.metadata.name);
            written.delete(e.object.metadata.name);
            unenforced.delete(e.object.metadata.name);
            l.info({ policy: e.object.metadata.name }, 'policy deleted');
          } else if (e.type !== 'BOOKMARK') {
            onPolicy(e.object);
          }
          if (e.type !== 'BOOKMARK') {
            syncRules();
            refreshStatuses();
          }
        },
        (err) => {
          listError = err.message;
          l.warn({ error: err.message }, 'AdmissionPolicy watch failed; retrying');
        },
      ),
    );
    // Namespace labels, for namespaceSelector (the AdmissionReview does not carry them).
    stops.push(
      startWatch<{ metadata: { name: string; labels?: Record<string, string> } }>(
        k,
        '/api/v1/namespaces',
        {},
        (e) => {
          if (e.type === 'RELISTED') {
            namespaceLabels.clear();
            for (const o of e.items) namespaceLabels.set(o.metadata.name, o.metadata.labels ?? {});
          } else if (e.type === 'DELETED') namespaceLabels.delete(e.object.metadata.name);
          else if (e.type !== 'BOOKMARK')
            namespaceLabels.set(e.object.metadata.name, e.object.metadata.labels ?? {});
        },
        (err) => l.debug({ error: err.message }, 'Namespace watch failed; retrying'),
      ),
    );
    // The policy webhook as the API server holds it: the evidence for `Enforced`; and if
    // someone re-applied the configurations (kubectl apply of the manifests), the registrar
    // is told to put the rules back.
    for (const kind of Object.keys(CONFIG_PATHS) as ConfigKind[]) {
      const which = kind === 'ValidatingWebhookConfiguration' ? 'validating' : 'mutating';
      stops.push(
        startWatch<{ webhooks?: ({ name: string } & ObservedWebhook)[] }>(
          k,
          CONFIG_PATHS[kind],
          { query: { fieldSelector: `metadata.name=${POLICY_CONFIGURATION}` } },
          (e) => {
            if (e.type === 'BOOKMARK') return;
            const objs = e.type === 'RELISTED' ? e.items : e.type === 'DELETED' ? [] : [e.object];
            const w = objs.flatMap((o) => o.webhooks ?? []).find((x) => x.name === POLICY_WEBHOOK);
            observed[which] = w;
            if (w && listed && !sameRules(w.rules, webhookRules())) registrationsChanged();
            refreshStatuses();
          },
          (err) =>
            l.debug({ kind, error: err.message }, 'webhook configuration watch failed; retrying'),
        ),
      );
    }
  }

  return {
    name: 'policy',
    webhooks: [mutating, validating, check],
    groups: [admissionEventsGroup(provider)],
    peer: { decisions: () => ({ replica: instance, items: log.items() }) },
    start: ({ kube: k, log: l, queue, registrationsChanged: changed }) => {
      kube = k;
      flog = l;
      registrationsChanged = changed;
      if (k) return startCluster(k, l, queue);
      for (const p of loadPolicies([settings.directory])) {
        set.put(p.source);
      }
      syncRules();
      listed = true;
      l.info(
        { directory: settings.directory, policies: set.policies.map((p) => p.name) },
        'loaded AdmissionPolicies (no API server)',
      );
    },
    stop: async () => {
      stopped = true;
      for (const s of stops.splice(0)) s();
      view?.stop();
      await recorder?.idle();
      recorder?.stop();
    },
    ready: () => listed || `AdmissionPolicies not listed yet${listError ? `: ${listError}` : ''}`,
    report: () => {
      if (!unenforced.size) return undefined;
      const names = [...unenforced].sort(([a], [b]) => (a < b ? -1 : 1));
      const shown = names.slice(0, 5).map(([n, why]) => `${n} (${why})`);
      const more = names.length > 5 ? ` and ${names.length - 5} more` : '';
      return `not enforced yet: ${shown.join(', ')}${more}`;
    },
  };
}
