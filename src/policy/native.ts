// The split between the API server and annex's webhook: which policies are enforced by
// the API server itself (compiled to CEL: ValidatingAdmissionPolicy and friends), whether
// their objects are stored yet, and who enforces each policy, for its status. The
// controller plans after every change of the policy set and applies on its queue.
import type { KubeClient } from '../kube/client.js';
import { celObjects, recordsAudit, syncCel, webhookPolicies } from './cel/apply.js';
import { celStatus, type CelObjects } from './cel/compile.js';
import type { CompiledPolicy } from './compile.js';
import { liveExceptions, type ExceptionSet } from './exceptions/match.js';
import type { Enforcement, PolicyStatus } from './status.js';

export interface NativeOptions {
  /** `policy.native`: compile what can be to CEL. */
  enabled: boolean;
  /** Whether there is an API server to hold the objects. */
  cluster(): boolean;
  annexNamespace: string;
  /** The PolicyExceptions: a policy they name stays on the webhook. */
  exceptions?: ExceptionSet;
}

/** The first three, and how many more. */
const named = (keys: readonly string[]) =>
  keys.slice(0, 3).join(', ') + (keys.length > 3 ? ` and ${keys.length - 3} more` : '');

export class NativePlan {
  /** The CEL objects the API server is to hold, by policy name. */
  private planned = new Map<string, CelObjects>();
  /** What the last apply stored, serialized, by policy name: the apply's answer. */
  private stored = new Map<string, string>();
  private readonly celOpts: { annexNamespace: string };

  constructor(private readonly opts: NativeOptions) {
    this.celOpts = { annexNamespace: opts.annexNamespace };
  }

  private candidate(p: CompiledPolicy): boolean {
    return (
      this.opts.enabled &&
      this.opts.cluster() &&
      !recordsAudit(p) &&
      !liveExceptions(this.opts.exceptions, p).length
    );
  }

  /** Plans `policies`; returns those left to annex's webhook. */
  plan(policies: readonly CompiledPolicy[]): readonly CompiledPolicy[] {
    this.planned = celObjects(
      policies.filter((p) => this.candidate(p)),
      this.celOpts,
    );
    return webhookPolicies(policies, this.planned);
  }

  /** Applies the planned objects unless the last apply stored them; true when it did. */
  async apply(kube: KubeClient): Promise<boolean> {
    const want = new Map([...this.planned].map(([name, o]) => [name, JSON.stringify(o)]));
    if (JSON.stringify([...want]) === JSON.stringify([...this.stored])) return false;
    await syncCel(kube, this.planned);
    this.stored = want;
    return true;
  }

  /** Who enforces `p`, and why the webhook when it does. */
  enforcedBy(p: CompiledPolicy): Pick<PolicyStatus, 'enforcedBy' | 'webhookReason'> {
    if (!this.candidate(p)) {
      const excepted = liveExceptions(this.opts.exceptions, p);
      const why = !this.opts.enabled
        ? 'policy.native is off'
        : recordsAudit(p)
          ? 'Audit decisions are recorded by annex'
          : `PolicyExceptions name it (${named(excepted.map((e) => e.key))}): annex honours and records them`;
      return { enforcedBy: 'webhook', webhookReason: why };
    }
    const s = celStatus(p, this.celOpts);
    return s.enforcedBy === 'webhook'
      ? { enforcedBy: 'webhook', webhookReason: s.reason ?? '' }
      : { enforcedBy: 'ValidatingAdmissionPolicy' };
  }

  /** `Enforced` for a policy the API server enforces; undefined for one left to the webhook. */
  enforced(p: CompiledPolicy): Enforcement | undefined {
    const cel = this.planned.get(p.name);
    if (!cel) return undefined;
    const names = [cel.vap, cel.binding, cel.map, cel.mapBinding]
      .filter((o) => o !== undefined)
      .map((o) => `${o.kind as string} ${(o.metadata as { name: string }).name}`)
      .join(', ');
    return this.stored.get(p.name) === JSON.stringify(cel)
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
}
