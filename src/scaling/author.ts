// Who an ExternalMetric speaks for. annex counts objects outside a metric's namespace with
// its own identity, so it first asks the API server whether the metric's author may list
// them (access.ts). The author is recorded here, at admission, by annex's mutating webhook
// on ExternalMetrics, in an annotation the webhook always sets itself:
//   - CREATE, and any UPDATE that changes `spec`: the requesting user (username, uid,
//     groups, extra: as a CertificateSigningRequest records its requester);
//   - an UPDATE that leaves `spec` as it was (labels, finalizers, the garbage collector
//     dropping an ownerReference): the annotation the object already had, so no one
//     becomes the author by touching metadata, and no one edits the record by hand.
// A user with `update` can therefore make the metric theirs only by changing what it
// measures, and then it is authorised as them. failurePolicy Fail: no write is admitted
// unrecorded; and the install registers this webhook before annex runs (registrations.yaml),
// so an ExternalMetric written before annex first answered was refused, not left with an
// annotation its writer chose.
import { isDeepStrictEqual } from 'node:util';
import type { KubeObject } from '../core/types.js';
import type { AdmissionRequest } from '../admission/review.js';
import { allow, mutate } from '../admission/verdict.js';
import { mutatingWebhook, type Webhook } from '../admission/webhook.js';
import { isObject } from '../json.js';
import { METRIC_GROUP, METRIC_PLURAL } from './types.js';

export const AUTHOR_ANNOTATION = `${METRIC_GROUP}/author`;

export interface Author {
  username: string;
  uid?: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

const strings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string');

/** The annotation's text for a user: fixed key order, extra's keys sorted. */
export function authorRecord(user: NonNullable<AdmissionRequest['userInfo']>): string | undefined {
  if (!user.username) return undefined;
  const extraKeys = Object.keys(user.extra ?? {}).sort();
  const author: Author = {
    username: user.username,
    ...(user.uid ? { uid: user.uid } : {}),
    groups: user.groups ?? [],
    ...(extraKeys.length
      ? { extra: Object.fromEntries(extraKeys.map((k) => [k, user.extra![k]!])) }
      : {}),
  };
  return JSON.stringify(author);
}

/** The recorded author of an object, or undefined when none is recorded (or it is not one). */
export function authorOf(o: Pick<KubeObject, 'metadata'>): Author | undefined {
  const text = o.metadata.annotations?.[AUTHOR_ANNOTATION];
  if (typeof text !== 'string') return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(v) || typeof v.username !== 'string' || v.username === '') return undefined;
  if (!strings(v.groups) || (v.uid !== undefined && typeof v.uid !== 'string')) return undefined;
  if (v.extra !== undefined && !(isObject(v.extra) && Object.values(v.extra).every(strings))) {
    return undefined;
  }
  return v as unknown as Author;
}

const recorded = (o: KubeObject | null | undefined) =>
  o?.metadata?.annotations?.[AUTHOR_ANNOTATION];

/** The annotation the stored object should carry after this request. */
function nextRecord(req: AdmissionRequest): string | undefined {
  const { object, oldObject } = req;
  if (req.operation === 'UPDATE' && oldObject && isDeepStrictEqual(object?.spec, oldObject.spec)) {
    return recorded(oldObject);
  }
  return req.userInfo ? authorRecord(req.userInfo) : undefined;
}

export function authorWebhook(): Webhook {
  return mutatingWebhook({
    name: `${METRIC_PLURAL}.${METRIC_GROUP}`,
    description: [
      `Records who created, or last changed the spec of, each ExternalMetric (annotation`,
      `${AUTHOR_ANNOTATION}): annex counts objects outside an ExternalMetric's namespace only`,
      `if that user may list them. Every namespace; until annex answers, ExternalMetric`,
      `writes are refused rather than left unrecorded.`,
    ].join('\n'),
    rules: [
      {
        operations: ['CREATE', 'UPDATE'],
        apiGroups: [METRIC_GROUP],
        apiVersions: ['*'],
        resources: [METRIC_PLURAL],
        scope: 'Namespaced',
      },
    ],
    failurePolicy: 'Fail',
    // ExternalMetrics are not needed to bring annex back: no namespace is left out.
    namespaceSelector: {},
    enforcedBeforeReady: true,
    admit: (req) => {
      const object = req.object;
      if (!object) return allow();
      const next = nextRecord(req);
      if (recorded(object) === next) return allow();
      const copy = structuredClone(object);
      const annotations = { ...copy.metadata.annotations };
      if (next === undefined) delete annotations[AUTHOR_ANNOTATION];
      else annotations[AUTHOR_ANNOTATION] = next;
      copy.metadata.annotations = annotations;
      return mutate(copy);
    },
  });
}
