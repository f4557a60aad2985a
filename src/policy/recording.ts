// What one policy decision leaves behind besides the answer: an AdmissionEvent in the
// decision log and a Kubernetes Event. Both say which policy, rule, request and fields;
// neither carries a value of the object.
import type { AdmissionRequest } from '../admission/review.js';
import type { EventInput, ObjectReference } from '../core/feature.js';
import type { DecisionAction, PolicyDecision } from './types.js';

const ACTIONS: Record<
  DecisionAction,
  { action: string; verb: string; type: EventInput['type']; reason: string }
> = {
  Deny: { action: 'Denied', verb: 'denied', type: 'Warning', reason: 'PolicyViolation' },
  Warn: { action: 'Warned', verb: 'warned about', type: 'Warning', reason: 'PolicyViolation' },
  Audit: { action: 'Audited', verb: 'audited', type: 'Normal', reason: 'PolicyViolation' },
  // Kyverno's word for the same Event is PolicySkipped; annex names the exception.
  Exempt: { action: 'Exempted', verb: 'exempted', type: 'Normal', reason: 'PolicyExempted' },
};

function objectRef(req: AdmissionRequest): ObjectReference {
  const o = req.object ?? req.oldObject;
  const name = req.name || o?.metadata?.name || '';
  const uid = req.operation === 'CREATE' ? undefined : o?.metadata?.uid;
  return {
    apiVersion: req.kind.group ? `${req.kind.group}/${req.kind.version}` : req.kind.version,
    kind: req.kind.kind,
    ...(req.namespace ? { namespace: req.namespace } : {}),
    name,
    ...(typeof uid === 'string' && uid ? { uid } : {}),
  };
}

/**
 * The Event for a decision, and the namespace it lives in. It regards the object; a
 * refused create has no object (an exemption's Event too, when another rule refused it),
 * so it regards the namespace (the would-be object is
 * `related`), and lives there, so `kubectl events -n NS` shows it. An Event about a
 * cluster-scoped object must live in `default` (API server validation).
 */
export function eventFor(
  d: PolicyDecision,
  req: AdmissionRequest,
  /** The request was refused (by this decision or another of the same review). */
  refused = d.action === 'Deny',
): { namespace: string; event: EventInput } {
  const { action, verb, type, reason } = ACTIONS[d.action];
  const object = objectRef(req);
  const refusedCreate = refused && req.operation === 'CREATE' && req.namespace;
  const regarding: ObjectReference = refusedCreate
    ? { apiVersion: 'v1', kind: 'Namespace', namespace: req.namespace!, name: req.namespace! }
    : object;
  const fields = [...new Set(d.causes.map((c) => c.field).filter(Boolean))];
  const what = `${req.operation} of ${req.kind.kind} ${object.namespace ? `${object.namespace}/` : ''}${object.name || '(generated name)'}`;
  const by = d.exception ? ` by PolicyException ${d.exception}` : '';
  const note = `AdmissionPolicy ${d.policy} rule ${d.rule} ${verb} ${what}${by}${fields.length ? `; fields: ${fields.join(', ')}` : ''}`;
  return {
    namespace: req.namespace || 'default',
    event: {
      regarding,
      ...(refusedCreate ? { related: object } : {}),
      reason,
      action,
      note,
      type,
    },
  };
}
