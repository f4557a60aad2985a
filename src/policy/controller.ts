// The policy controller: watches AdmissionPolicies, the policy webhook configurations and
// Namespaces into the shared state, and makes every write that follows — the webhooks'
// `rules` (through the registrar: FeatureContext.registrationsChanged), the CEL objects
// (`policy/cel`) and each policy's status (`policy/status/<name>`), the last two on the
// process's work queue, which runs one write per key at a time, a write asked for
// meanwhile once after, and retries a failure with backoff until it holds.
import type { FeatureContext, WriterQueue } from '../core/feature.js';
import { KubeApiError, type KubeClient } from '../kube/client.js';
import { startWatch } from '../kube/reflector.js';
import type { Logger } from '../log.js';
import { sameRules, unionRules, type Compiled } from './engine.js';
import { ExceptionController } from './exceptions/controller.js';
import { loadExceptions, loadPolicies } from './load.js';
import { NativePlan } from './native.js';
import type { PolicyState } from './state.js';
import {
  policyStatus,
  statusKey,
  webhookEnforcement,
  type Enforcement,
  type Observed,
  type ObservedWebhook,
  type PolicyStatus,
} from './status.js';
import {
  POLICY_GROUP,
  POLICY_KIND,
  POLICY_PLURAL,
  POLICY_VERSION,
  type AdmissionPolicy,
} from './types.js';
import { POLICY_CONFIGURATION, POLICY_WEBHOOK } from './webhooks.js';

const FIELD_MANAGER = 'annex';
const POLICIES_PATH = `/apis/${POLICY_GROUP}/${POLICY_VERSION}/${POLICY_PLURAL}`;
const CONFIG_PATHS = {
  ValidatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations',
  MutatingWebhookConfiguration:
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
} as const;
type ConfigKind = keyof typeof CONFIG_PATHS;
const CEL = 'cel';
const STATUS = 'status/';

export interface ControllerOptions {
  /** `policy.native`: policies compiled to CEL are enforced by the API server. */
  native: boolean;
  /** Where the policies come from without an API server. */
  directory: string;
  annexNamespace: string;
  /** annex's serving certificate (PEM; '' when unreadable): the caBundle must verify it. */
  servingCert(): string;
  /** Called after every change of the policy set (the background scans follow it). */
  policiesChanged?(): void;
  /** Called when a namespace's labels change (namespaceSelector: the scans follow it). */
  namespaceLabelsChanged?(): void;
}

export class PolicyController {
  private readonly native: NativePlan;
  private readonly exceptions: ExceptionController;
  private log: Logger | undefined;
  private writes: WriterQueue | undefined;
  private registrationsChanged = () => {};
  private stopped = false;
  private listed = false;
  private listError = '';
  private readonly stops: (() => void)[] = [];
  /** The rules last declared, serialized. */
  private declared = '';
  /** The policy webhook as the API server holds it (watched): what `Enforced` is judged on. */
  private readonly observed: Observed = {};
  private readonly latest = new Map<string, AdmissionPolicy>();
  /** The status key last written, by policy. */
  private readonly written = new Map<string, string>();
  /** Policies not (yet) enforced, by name, with the reason: /readyz?verbose says them. */
  private readonly unenforced = new Map<string, string>();

  constructor(
    private readonly state: PolicyState,
    private readonly opts: ControllerOptions,
  ) {
    this.native = new NativePlan({
      enabled: opts.native,
      cluster: () => state.kube !== null,
      annexNamespace: opts.annexNamespace,
      exceptions: state.exceptions,
    });
    this.exceptions = new ExceptionController(state, {
      policy: (name) => this.latest.get(name),
      // A policy an exception names now (or no longer) moves between CEL and the webhook.
      changed: () => {
        this.syncRules();
        this.refreshStatuses();
      },
    });
  }

  start(ctx: FeatureContext): void {
    this.state.kube = ctx.kube;
    this.log = ctx.log;
    this.registrationsChanged = () => ctx.registrationsChanged();
    if (ctx.kube) return this.startCluster(ctx.kube, ctx.log, ctx);
    for (const p of loadPolicies([this.opts.directory])) this.state.set.put(p.source);
    this.state.exceptions.replace(loadExceptions([this.opts.directory]));
    this.syncRules();
    this.listed = true;
    ctx.log.info(
      { directory: this.opts.directory, policies: this.state.set.policies.map((p) => p.name) },
      'loaded AdmissionPolicies (no API server)',
    );
  }

  stop(): void {
    this.stopped = true;
    this.exceptions.stop();
    for (const s of this.stops.splice(0)) s();
  }

  ready(): true | string {
    const why = this.listError ? `: ${this.listError}` : '';
    return this.listed || `AdmissionPolicies not listed yet${why}`;
  }

  report(): string | undefined {
    // Not a readiness gate: until listed, no rule is exempted (the policies fail closed).
    const exceptions = this.exceptions.ready();
    const unlisted = exceptions === true ? undefined : exceptions;
    const enforced = this.unenforcedReport();
    return [enforced, unlisted].filter((r) => r).join('; ') || undefined;
  }

  private unenforcedReport(): string | undefined {
    if (!this.unenforced.size) return undefined;
    const names = [...this.unenforced].sort(([a], [b]) => (a < b ? -1 : 1));
    const shown = names.slice(0, 5).map(([n, why]) => `${n} (${why})`);
    const more = names.length > 5 ? ` and ${names.length - 5} more` : '';
    return `not enforced yet: ${shown.join(', ')}${more}`;
  }

  /**
   * Plans the split with the API server, sets the rules the webhooks declare (what the
   * API server must still send annex: the union of the webhook-side policies' rules; the
   * registrar, the one writer of annex-policies, re-renders them when told) and queues the
   * CEL objects.
   */
  private syncRules(): void {
    this.state.onWebhook = this.native.plan(this.state.set.policies);
    const rules = unionRules(this.state.onWebhook.flatMap((p) => p.rules));
    this.state.rules = rules;
    if (JSON.stringify(rules) !== this.declared) {
      this.declared = JSON.stringify(rules);
      this.registrationsChanged();
    }
    this.writes?.add(CEL);
    this.opts.policiesChanged?.();
  }

  private async applyNative(): Promise<void> {
    const kube = this.state.kube;
    if (!kube || this.stopped) return;
    if (await this.native.apply(kube)) this.refreshStatuses();
  }

  private onPolicy(obj: AdmissionPolicy): void {
    this.latest.set(obj.metadata.name, obj);
    const c = this.state.set.put(obj);
    if (c.error)
      this.log?.warn({ policy: obj.metadata.name, error: c.error }, 'policy does not compile');
  }

  /** Queues the status writes that would change what a policy holds. */
  private refreshStatuses(): void {
    if (!this.state.kube) return;
    const cert = this.opts.servingCert();
    for (const obj of this.latest.values())
      if (this.desired(obj, this.state.set.put(obj), cert))
        this.writes?.add(`${STATUS}${obj.metadata.name}`);
  }

  private enforced(c: Compiled, cert: string): Enforcement {
    if (!c.policy)
      return { status: 'False', reason: 'NotReady', message: 'the policy does not compile' };
    return (
      this.native.enforced(c.policy) ??
      webhookEnforcement(c.policy, this.observed, cert, POLICY_CONFIGURATION)
    );
  }

  /**
   * The status `obj` should hold (and, for /readyz, whether it is enforced); undefined when
   * it holds it already or it was last written so.
   */
  private desired(obj: AdmissionPolicy, c: Compiled, cert: string): PolicyStatus | undefined {
    const e = this.enforced(c, cert);
    if (e.status === 'True') this.unenforced.delete(obj.metadata.name);
    else this.unenforced.set(obj.metadata.name, e.reason);
    const by = c.policy ? this.native.enforcedBy(c.policy) : {};
    const status = policyStatus(obj, c, e, by, new Date());
    // The same status (times aside) as last written or as the object holds: nothing to do.
    const key = statusKey(status);
    const held = obj.status ? statusKey(obj.status) : '';
    if (this.written.get(obj.metadata.name) === key || held === key) return undefined;
    return status;
  }

  private async writeStatus(name: string): Promise<void> {
    const obj = this.latest.get(name);
    const kube = this.state.kube;
    if (!kube || this.stopped || !obj) return;
    const status = this.desired(obj, this.state.set.put(obj), this.opts.servingCert());
    if (!status) return;
    this.written.set(name, statusKey(status));
    try {
      await kube.patch(
        `${POLICIES_PATH}/${encodeURIComponent(name)}/status`,
        {
          apiVersion: `${POLICY_GROUP}/${POLICY_VERSION}`,
          kind: POLICY_KIND,
          metadata: { name },
          status,
        },
        'apply',
        { fieldManager: FIELD_MANAGER, force: true },
      );
    } catch (e) {
      this.written.delete(name);
      // Gone meanwhile: nothing to write. Else (API server away, 403, 409, 422, 5xx) the
      // queue writes it again after a backoff.
      if (e instanceof KubeApiError && e.code === 404) return;
      throw e;
    }
  }

  private startCluster(k: KubeClient, l: Logger, { queue }: FeatureContext): void {
    this.exceptions.start(k, l, queue);
    this.writes = queue.writer('policy', {
      handle: (name) =>
        name === CEL ? this.applyNative() : this.writeStatus(name.slice(STATUS.length)),
      onError: (name, e, retryInMs) =>
        name === CEL
          ? l.error(
              { error: e.message, retryInMs },
              'cannot apply the policies compiled to CEL; retrying',
            )
          : l.warn(
              { policy: name.slice(STATUS.length), error: e.message, retryInMs },
              'status not written; retrying',
            ),
    });
    this.stops.push(
      startWatch<AdmissionPolicy>(
        k,
        POLICIES_PATH,
        {},
        (e) => {
          if (e.type === 'BOOKMARK') return;
          if (e.type === 'RELISTED') {
            this.state.set.replace(e.items);
            this.latest.clear();
            this.unenforced.clear();
            for (const o of e.items) this.onPolicy(o);
            this.listed = true;
            this.listError = '';
            l.info(
              { policies: e.items.length, ready: this.state.set.policies.length },
              'listed AdmissionPolicies',
            );
          } else if (e.type === 'DELETED') {
            const name = e.object.metadata.name;
            this.state.set.delete(name);
            this.latest.delete(name);
            this.written.delete(name);
            this.unenforced.delete(name);
            l.info({ policy: name }, 'policy deleted');
          } else {
            this.onPolicy(e.object);
          }
          this.syncRules();
          this.refreshStatuses();
          this.exceptions.refreshStatuses();
        },
        (err) => {
          this.listError = err.message;
          l.warn({ error: err.message }, 'AdmissionPolicy watch failed; retrying');
        },
      ),
    );
    this.stops.push(
      startWatch<{ metadata: { name: string; labels?: Record<string, string> } }>(
        k,
        '/api/v1/namespaces',
        {},
        (e) => {
          const labels = this.state.namespaceLabels;
          if (e.type === 'BOOKMARK') return;
          const name = e.type === 'RELISTED' ? '' : e.object.metadata.name;
          const before = JSON.stringify(labels.get(name));
          if (e.type === 'RELISTED') {
            labels.clear();
            for (const o of e.items) labels.set(o.metadata.name, o.metadata.labels ?? {});
          } else if (e.type === 'DELETED') labels.delete(name);
          else labels.set(name, e.object.metadata.labels ?? {});
          // A relist may have changed any; an event, the one namespace (not its creation).
          const changed =
            e.type === 'RELISTED' ||
            (before !== undefined && JSON.stringify(labels.get(name)) !== before);
          if (changed) this.opts.namespaceLabelsChanged?.();
        },
        (err) => l.debug({ error: err.message }, 'Namespace watch failed; retrying'),
      ),
    );
    // The policy webhook as the API server holds it: the evidence for `Enforced`; and if
    // someone re-applied the configurations (kubectl apply of the manifests), the registrar
    // is told to put the rules back.
    for (const kind of Object.keys(CONFIG_PATHS) as ConfigKind[]) {
      const which = kind === 'ValidatingWebhookConfiguration' ? 'validating' : 'mutating';
      this.stops.push(
        startWatch<{ webhooks?: ({ name: string } & ObservedWebhook)[] }>(
          k,
          CONFIG_PATHS[kind],
          { query: { fieldSelector: `metadata.name=${POLICY_CONFIGURATION}` } },
          (e) => {
            if (e.type === 'BOOKMARK') return;
            const objs = e.type === 'RELISTED' ? e.items : e.type === 'DELETED' ? [] : [e.object];
            const w = objs.flatMap((o) => o.webhooks ?? []).find((x) => x.name === POLICY_WEBHOOK);
            this.observed[which] = w;
            if (w && this.listed && !sameRules(w.rules, this.state.rules))
              this.registrationsChanged();
            this.refreshStatuses();
          },
          (err) =>
            l.debug({ kind, error: err.message }, 'webhook configuration watch failed; retrying'),
        ),
      );
    }
  }
}
