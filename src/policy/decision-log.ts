// The decision log: every Deny, Warn and Audit decision of this replica as an
// AdmissionEvent (audit.annex.dev/v1alpha1, namespaced by the request's namespace), held
// in a bounded ObjectStore (oldest dropped, as DELETED to watchers), and counted on
// /metrics. What was decided about which request by whom: never the object's contents.
import { randomBytes } from 'node:crypto';
import type { AdmissionRequest } from '../admission/review.js';
import { ObjectStore } from '../apiserver/object-store.js';
import { resource } from '../apiserver/resource.js';
import type { GroupVersionDecl, KubeObject, Provider } from '../core/types.js';
import type { DecisionAction, PolicyDecision } from './types.js';
import { counter, histogram } from '../core/metric.js';

export const AUDIT_GROUP = 'audit.annex.dev';
export const AUDIT_VERSION = 'v1alpha1';

export interface AdmissionEvent extends KubeObject {
  time: string;
  decision: DecisionAction;
  policy: string;
  /** `namespace/name` of the PolicyException of an Exempt decision. */
  exception?: string;
  rule: string;
  operation: string;
  object: { apiVersion: string; kind: string; namespace?: string; name: string };
  user: string;
  /** The field paths the rule reported (values never). */
  fields: string[];
  dryRun: boolean;
  /** The annex replica that decided. */
  replica: string;
}

const decisionsTotal = counter({
  name: 'annex_policy_decisions_total',
  help: 'Policy decisions recorded, by policy and action (Deny, Warn, Audit, Exempt).',
  labelNames: ['policy', 'action'],
});

const evaluationSeconds = histogram({
  name: 'annex_policy_evaluation_duration_seconds',
  help: 'Time to evaluate one policy against one admission request, by policy.',
  labelNames: ['policy'],
  buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25],
});

/** One policy's evaluation time, for the per-policy histogram. */
export const observeEvaluation = (policy: string, seconds: number) =>
  evaluationSeconds.observe({ policy }, seconds);

/** `20260102030405678`: names sort by time, so lists read oldest first. */
const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:TZ.]/g, '');

export function requestUser(req: AdmissionRequest): string {
  return req.userInfo?.username ?? '';
}

export class DecisionLog {
  readonly store = new ObjectStore();
  /** Keys of the stored events, oldest first (a FIFO: the bound drops from the front). */
  private readonly order: [string | undefined, string][] = [];
  /** Random per process: two replicas never make the same name, even on one host. */
  private readonly tag = randomBytes(3).toString('hex');
  private seq = 0;

  constructor(private readonly opts: { maxEntries: number; replica: string }) {}

  /** Records a decision; returns the AdmissionEvent stored. */
  record(d: PolicyDecision, req: AdmissionRequest, at = Date.now()): AdmissionEvent {
    const object = req.object ?? req.oldObject;
    const name = req.name || object?.metadata?.name || '';
    const namespace = req.namespace || undefined;
    const event: AdmissionEvent = {
      metadata: {
        name: `${stamp(at)}-${this.tag}-${++this.seq}`,
        ...(namespace ? { namespace } : {}),
        creationTimestamp: new Date(Math.floor(at / 1000) * 1000).toISOString().replace('.000', ''),
      },
      time: new Date(at).toISOString(),
      decision: d.action,
      policy: d.policy,
      ...(d.exception ? { exception: d.exception } : {}),
      rule: d.rule,
      operation: req.operation,
      object: {
        apiVersion: req.kind.group ? `${req.kind.group}/${req.kind.version}` : req.kind.version,
        kind: req.kind.kind,
        ...(namespace ? { namespace } : {}),
        name,
      },
      user: requestUser(req),
      fields: [...new Set(d.causes.map((c) => c.field))],
      dryRun: req.dryRun ?? false,
      replica: this.opts.replica,
    };
    this.store.set(event);
    this.order.push([namespace, event.metadata.name]);
    while (this.order.length > this.opts.maxEntries) {
      const [ns, n] = this.order.shift()!;
      this.store.delete(ns, n);
    }
    decisionsTotal.inc({ policy: d.policy, action: d.action });
    return event;
  }

  /** This replica's own decisions (what peers fetch). */
  items(): KubeObject[] {
    return this.store.snapshot().items;
  }
}

/** The AdmissionEvent resource over a provider (the log itself, or the replicas merged). */
export function admissionEventsGroup(provider: Provider): GroupVersionDecl {
  const str = (description: string) => ({ type: 'string', description });
  const kind = resource({
    kind: 'AdmissionEvent',
    shortNames: ['aev'],
    description:
      'One decision of an annex AdmissionPolicy (Deny, Warn or Audit, or Exempt: a PolicyException lifted the rule) on one admission request: which policy and rule, on what object, by whom. Never the object contents.',
    fields: {
      time: { type: 'string', format: 'date-time', description: 'When annex decided.' },
      decision: str('The action taken: Deny, Warn, Audit, or Exempt.'),
      policy: str('The AdmissionPolicy.'),
      exception: str('The PolicyException (namespace/name) of an Exempt decision.'),
      rule: str('The rule of the policy that failed.'),
      operation: str('CREATE, UPDATE, DELETE or CONNECT.'),
      object: {
        type: 'object',
        description: 'The object of the request (apiVersion, kind, namespace, name).',
        properties: {
          apiVersion: { type: 'string' },
          kind: { type: 'string' },
          namespace: { type: 'string' },
          name: { type: 'string' },
        },
      },
      user: str('Who sent the request.'),
      fields: {
        type: 'array',
        items: { type: 'string' },
        description: 'Field paths the rule reported.',
      },
      dryRun: { type: 'boolean', description: 'The request was a dry run.' },
      replica: str('The annex replica that decided.'),
    },
    columns: {
      Time: '$.time',
      Decision: '$.decision',
      Policy: '$.policy',
      Rule: '$.rule',
      Kind: '$.object.kind',
      Object: '$.object.name',
      User: '$.user',
      // `kubectl apply --dry-run=server` is decided like any request: say so, in -o wide.
      'Dry Run': { jsonPath: '$.dryRun', priority: 1 },
      Exception: { jsonPath: '$.exception', priority: 1 },
    },
    selectableFields: { policy: '$.policy', decision: '$.decision', rule: '$.rule' },
    provider,
  });
  return {
    group: AUDIT_GROUP,
    versions: [AUDIT_VERSION],
    resources: [kind],
    apiService: {
      description:
        'annex policy decisions (AdmissionEvents): kubectl get admissionevents [-w] [--field-selector policy=NAME,decision=Deny].',
    },
  };
}
