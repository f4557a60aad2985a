// AdmissionPolicies, live: list + watch them through the API server, compile each once per
// generation, report `status.ready`/`status.error`, keep the policy webhooks' `rules` equal
// to the union of what the policies match (server-side apply, field manager annex), answer
// those webhooks with the pure evaluator, and record every Deny/Warn/Audit decision of a
// review from the API server (ReviewContext.authenticated) as an AdmissionEvent and a
// Kubernetes Event. A validating webhook on AdmissionPolicy objects
// refuses one that does not compile, with compilePolicy's message. Without an API server
// (a laptop `npm start`), the policies come from `policy.directory`.
import { hostname } from 'node:os';
import type { AdmissionRequest } from '../admission/review.js';
import { allow, deny, denyInvalid, mutate, type Verdict } from '../admission/verdict.js';
import {
  validatingWebhook,
  type ReviewContext,
  type RuleWithOperations,
  type Webhook,
} from '../admission/webhook.js';
import type { Provider } from '../apiserver/types.js';
import { loadServingMaterial } from '../certs/index.js';
import { loadPolicies } from '../cli/check.js';
import type { Config } from '../config/load.js';
import type { KubeClient } from '../kube/client.js';
import { EventRecorder, kubeEventSink } from '../kube/events.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import type { Feature } from '../server/feature.js';
import { celObjects, recordsAudit, syncCel, webhookPolicies } from './cel/apply.js';
import { celStatus, type CelObjects } from './cel/compile.js';
import { compilePolicy, type CompiledPolicy } from './compile.js';
import { admissionEventsGroup, DecisionLog, observeEvaluation } from './decision-log.js';
import { evaluate, type EvaluateContext } from './evaluate.js';
import { policyMatches } from './match.js';
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

/** One rule per operations/groups/versions/scope, resources merged: the API server's view of the union. */
export function unionRules(rules: readonly RuleWithOperations[]): RuleWithOperations[] {
  const byKey = new Map<string, RuleWithOperations>();
  for (const r of rules) {
    const head = {
      operations: [...new Set(r.operations)].sort(),
      apiGroups: [...new Set(r.apiGroups)].sort(),
      apiVersions: [...new Set(r.apiVersions)].sort(),
      scope: r.scope ?? '*',
    };
    const key = JSON.stringify(head);
    const into = byKey.get(key) ?? { ...head, resources: [] };
    into.resources = [...new Set([...into.resources, ...r.resources])].sort();
    byKey.set(key, into);
  }
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, r]) => r);
}

/** The same rules whatever the API server defaulted (scope) or reordered. */
const sameRules = (a: unknown, b: readonly RuleWithOperations[]) =>
  JSON.stringify(unionRules(Array.isArray(a) ? (a as RuleWithOperations[]) : [])) ===
  JSON.stringify(b);

interface Compiled {
  generation: number | undefined;
  uid: string | undefined;
  policy?: CompiledPolicy;
  error?: string;
}

/** The compiled set, by name; a policy is compiled again only when its generation moves. */
export class PolicySet {
  private readonly byName = new Map<string, Compiled>();
  private sorted: CompiledPolicy[] = [];

  /** Compiles (or reuses) one policy; returns its compile result. */
  put(obj: AdmissionPolicy): Compiled {
    const name = obj.metadata?.name ?? '';
    const known = this.byName.get(name);
    if (known && known.generation === obj.metadata.generation && known.uid === obj.metadata.uid) {
      return known;
    }
    let entry: Compiled;
    try {
      entry = {
        generation: obj.metadata.generation,
        uid: obj.metadata.uid,
        policy: compilePolicy(obj),
      };
    } catch (e) {
      if (!(e instanceof PolicyCompileError)) throw e;
      entry = { generation: obj.metadata.generation, uid: obj.metadata.uid, error: e.message };
    }
    this.byName.set(name, entry);
    this.resort();
    return entry;
  }

  delete(name: string): void {
    if (this.byName.delete(name)) this.resort();
  }

  /** Exactly these objects (a relist). */
  replace(objs: AdmissionPolicy[]): void {
    const keep = new Set(objs.map((o) => o.metadata.name));
    for (const name of [...this.byName.keys()]) if (!keep.has(name)) this.byName.delete(name);
    for (const o of objs) this.put(o);
    this.resort();
  }

  /** Ready policies, by name. */
  get policies(): readonly CompiledPolicy[] {
    return this.sorted;
  }

  /** What the API server must send annex: the union of the ready policies' rules. */
  rules(): RuleWithOperations[] {
    return unionRules(this.sorted.flatMap((p) => p.rules));
  }

  private resort(): void {
    this.sorted = [...this.byName.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([, c]) => (c.policy ? [c.policy] : []));
  }
}

export interface DecideOutcome {
  verdict: Verdict;
  decisions: PolicyDecision[];
}

/**
 * The validating answer: every policy evaluated alone (for its latency histogram), folded
 * as evaluate() folds a set — decisions and warnings in policy order, every Deny cause in
 * one 422 Invalid Status.
 */
export function decide(
  policies: readonly CompiledPolicy[],
  req: AdmissionRequest,
  ctx: EvaluateContext,
): DecideOutcome {
  const decisions: PolicyDecision[] = [];
  const warnings: string[] = [];
  for (const p of policies) {
    if (!policyMatches(p, req, ctx)) continue;
    const t0 = process.hrtime.bigint();
    const e = evaluate([p], req, ctx);
    observeEvaluation(p.name, Number(process.hrtime.bigint() - t0) / 1e9);
    decisions.push(...e.decisions);
    warnings.push(...e.warnings);
  }
  const denyCauses = decisions.filter((d) => d.action === 'Deny').flatMap((d) => d.causes);
  if (!denyCauses.length) return { verdict: allow(warnings), decisions };
  const v = denyInvalid(req, denyCauses);
  return { verdict: warnings.length ? { ...v, warnings } : v, decisions };
}

/** The mutating answer: every matching policy's mutate rules, in order. */
export function mutateWith(
  policies: readonly CompiledPolicy[],
  req: AdmissionRequest,
  ctx: EvaluateContext,
): Verdict {
  let object = req.object;
  let changed = false;
  for (const p of policies) {
    if (!p.mutate.length || !policyMatches(p, req, ctx)) continue;
    const t0 = process.hrtime.bigint();
    const e = evaluate([p], { ...req, object: object ?? null }, ctx);
    observeEvaluation(p.name, Number(process.hrtime.bigint() - t0) / 1e9);
    if (e.mutated) {
      object = e.mutated;
      changed = true;
    }
  }
  return changed && object ? mutate(object) : allow();
}

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

  /** The rules the API server and annex's own matching use, from the ready policies. */
  let applied = '';
  let applying: Promise<void> | undefined;
  let again = false;
  // What the API server enforces itself (compiled to CEL), and what is left to the webhook.
  let native = new Map<string, CelObjects>();
  let onWebhook: readonly CompiledPolicy[] = [];
  let nativeApplied = '';
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

  function syncRules(): void {
    plan();
    const rules = webhookRules();
    for (const w of [validating, mutating]) w.registrations[0]!.rules = rules;
    if (!kube) return;
    if (applying) {
      again = true;
      return;
    }
    const want = JSON.stringify(rules);
    const wantNative = JSON.stringify([...native.entries()]);
    if (want === applied && wantNative === nativeApplied) return;
    applying = (async () => {
      let ok = true;
      // The native objects first: a policy moving to the API server is enforced there
      // before the webhook stops evaluating it.
      await syncCel(kube!, native).then(
        () => (nativeApplied = wantNative),
        (e: Error) => {
          ok = false;
          flog?.error({ error: e.message }, 'cannot apply the policies compiled to CEL');
        },
      );
      for (const kind of Object.keys(CONFIG_PATHS) as ConfigKind[]) {
        await applyRules(kube!, kind, rules).catch((e: Error) => {
          ok = false;
          flog?.error(
            { kind, name: POLICY_CONFIGURATION, error: e.message },
            'cannot update the policy webhook rules (is the configuration installed?)',
          );
        });
      }
      // On failure the next policy change, or the configuration appearing, tries again.
      if (ok) {
        applied = want;
        flog?.info({ rules: rules.length }, 'policy webhook rules applied');
      }
    })().finally(() => {
      applying = undefined;
      if (again) {
        again = false;
        syncRules();
      }
    });
  }

  function onPolicy(obj: AdmissionPolicy): void {
    const c = set.put(obj);
    if (c.error)
      flog?.warn({ policy: obj.metadata.name, error: c.error }, 'policy does not compile');
    void writeStatus(obj, c);
  }

  async function writeStatus(obj: AdmissionPolicy, c: Compiled): Promise<void> {
    if (!kube) return;
    const status: PolicyStatus = {
      ready: !c.error,
      ...(c.error ? { error: c.error } : {}),
      ...(obj.metadata.generation !== undefined
        ? { observedGeneration: obj.metadata.generation }
        : {}),
      ...(c.policy ? enforcement(c.policy) : {}),
    };
    const cur = obj.status;
    if (
      cur &&
      cur.ready === status.ready &&
      (cur.error ?? '') === (status.error ?? '') &&
      cur.observedGeneration === status.observedGeneration &&
      cur.enforcedBy === status.enforcedBy &&
      (cur.webhookReason ?? '') === (status.webhookReason ?? '')
    ) {
      return;
    }
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
      // Gone meanwhile (404) or a newer generation on its way: the next event writes again.
      flog?.debug({ policy: obj.metadata.name, error: (e as Error).message }, 'status not written');
    }
  }

  function startCluster(k: KubeClient, l: Logger): void {
    recorder = settings.events
      ? new EventRecorder({
          sink: kubeEventSink(k),
          controller: 'annex.dev/policy',
          instance,
          onError: (e, ev) =>
            l.warn(
              { error: e.message, action: ev.action, regarding: ev.regarding.name },
              'event not written',
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
            for (const o of e.items) onPolicy(o);
            listed = true;
            listError = '';
            l.info(
              { policies: e.items.length, ready: set.policies.length },
              'listed AdmissionPolicies',
            );
          } else if (e.type === 'DELETED') {
            set.delete(e.object.metadata.name);
            l.info({ policy: e.object.metadata.name }, 'policy deleted');
          } else if (e.type !== 'BOOKMARK') {
            onPolicy(e.object);
          }
          if (e.type !== 'BOOKMARK') syncRules();
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
    // Someone re-applied the configurations (kubectl apply of the manifests): put the rules back.
    for (const kind of Object.keys(CONFIG_PATHS) as ConfigKind[]) {
      stops.push(
        startWatch<{ webhooks?: { name: string; rules?: unknown }[] }>(
          k,
          CONFIG_PATHS[kind],
          { query: { fieldSelector: `metadata.name=${POLICY_CONFIGURATION}` } },
          (e) => {
            const objs = e.type === 'RELISTED' ? e.items : e.type === 'DELETED' ? [] : [e.object];
            for (const o of objs) {
              const w = o.webhooks?.find((x) => x.name === POLICY_WEBHOOK);
              if (w && listed && !sameRules(w.rules, webhookRules())) {
                applied = '';
                syncRules();
              }
            }
          },
          () => {},
        ),
      );
    }
  }

  return {
    name: 'policy',
    webhooks: [mutating, validating, check],
    groups: [admissionEventsGroup(provider)],
    peer: { decisions: () => ({ replica: instance, items: log.items() }) },
    start: ({ kube: k, log: l }) => {
      kube = k;
      flog = l;
      if (k) return startCluster(k, l);
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
      for (const s of stops.splice(0)) s();
      view?.stop();
      await recorder?.idle();
      recorder?.stop();
    },
    ready: () => listed || `AdmissionPolicies not listed yet${listError ? `: ${listError}` : ''}`,
  };
}

async function applyRules(
  kube: KubeClient,
  kind: ConfigKind,
  rules: RuleWithOperations[],
): Promise<void> {
  await kube.patch(
    `${CONFIG_PATHS[kind]}/${POLICY_CONFIGURATION}`,
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name: POLICY_CONFIGURATION },
      webhooks: [{ name: POLICY_WEBHOOK, rules }],
    },
    'apply',
    { fieldManager: FIELD_MANAGER, force: true },
  );
}
