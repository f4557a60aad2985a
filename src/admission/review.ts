// The AdmissionReview contract (admission.k8s.io v1 and v1beta1): parse what the API
// server sends, refuse what is not a review with a 400 Status, and answer in the
// request's own apiVersion with its uid (v1 servers check both).
import { badRequest, type Status } from '../core/status.js';
import type { AdmissionRequest } from '../core/webhook.js';
import { logField } from '../log.js';
import { isObject, nestsDeeperThan } from '../json.js';

export type { AdmissionRequest, GroupVersionKind, Operation } from '../core/webhook.js';

export const REVIEW_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type ReviewVersion = (typeof REVIEW_VERSIONS)[number];

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: Omit<Status, 'kind' | 'apiVersion' | 'metadata'> | Status;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}

export interface AdmissionReview {
  apiVersion: ReviewVersion;
  kind: 'AdmissionReview';
  request?: AdmissionRequest;
  response?: AdmissionResponse;
}

const OPERATIONS = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

/**
 * A wrong envelope value in a message: a string quoted and bounded, anything else by its
 * type only (stringifying a value the sender chose could be huge, or too deep to print).
 */
const shown = (v: unknown) =>
  typeof v === 'string' ? JSON.stringify(logField(v, 64)) : logField(v ?? null);

/** Checks the envelope and the request fields annex relies on; the object itself is the webhook's business. */
export function parseReview(body: unknown): {
  apiVersion: ReviewVersion;
  request: AdmissionRequest;
} {
  if (!isObject(body)) throw badRequest('the request body must be a JSON AdmissionReview object');
  const { apiVersion, kind, request } = body;
  if (kind !== 'AdmissionReview') {
    throw badRequest(`expected kind "AdmissionReview", got ${shown(kind)}`);
  }
  if (!REVIEW_VERSIONS.includes(apiVersion as ReviewVersion)) {
    throw badRequest(
      `unsupported AdmissionReview apiVersion ${shown(apiVersion)}: expected one of ${REVIEW_VERSIONS.join(', ')}`,
    );
  }
  if (!isObject(request)) throw badRequest('AdmissionReview has no request');
  if (typeof request.uid !== 'string' || request.uid === '') {
    throw badRequest('AdmissionReview request.uid is missing');
  }
  if (!OPERATIONS.has(request.operation as string)) {
    throw badRequest(
      `AdmissionReview request.operation ${shown(request.operation)} is not one of CREATE, UPDATE, DELETE, CONNECT`,
    );
  }
  const gvk = request.kind;
  if (
    !isObject(gvk) ||
    typeof gvk.kind !== 'string' ||
    typeof gvk.version !== 'string' ||
    typeof (gvk.group ?? '') !== 'string'
  ) {
    throw badRequest('AdmissionReview request.kind must be {group, version, kind}');
  }
  gvk.group ??= '';
  // Webhook rules match on the resource, so annex needs it as much as the kind.
  const gvr = request.resource;
  if (
    !isObject(gvr) ||
    typeof gvr.resource !== 'string' ||
    typeof gvr.version !== 'string' ||
    typeof (gvr.group ?? '') !== 'string'
  ) {
    throw badRequest('AdmissionReview request.resource must be {group, version, resource}');
  }
  gvr.group ??= '';
  // The envelope's own fields have Go types (AdmissionRequest): a name that is not a
  // string is not an AdmissionReview the API server could have sent.
  for (const f of ['name', 'namespace', 'subResource'] as const) {
    if (request[f] !== undefined && request[f] !== null && typeof request[f] !== 'string') {
      throw badRequest(`AdmissionReview request.${f} must be a string`);
    }
  }
  if (
    request.dryRun !== undefined &&
    request.dryRun !== null &&
    typeof request.dryRun !== 'boolean'
  ) {
    throw badRequest('AdmissionReview request.dryRun must be a boolean');
  }
  for (const f of ['object', 'oldObject'] as const) {
    const o = request[f];
    if (o !== undefined && o !== null && !isObject(o)) {
      throw badRequest(`AdmissionReview request.${f} must be an object or null`);
    }
  }
  return {
    apiVersion: apiVersion as ReviewVersion,
    request: request as unknown as AdmissionRequest,
  };
}

export function reviewResponse(
  apiVersion: ReviewVersion,
  response: AdmissionResponse,
): AdmissionReview {
  return { apiVersion, kind: 'AdmissionReview', response };
}

/**
 * How deeply an object may nest for annex to evaluate it. The API server accepts 10,000
 * levels (Go's encoding/json), but structuredClone and JSON.stringify overflow the stack
 * near 3,000 and 5,000, and real objects nest a few dozen levels at most.
 */
export const MAX_OBJECT_DEPTH = 1000;

/** `object` or `oldObject` if it nests deeper than `max` levels of maps and lists, else undefined. */
export function tooDeep(
  request: AdmissionRequest,
  max = MAX_OBJECT_DEPTH,
): 'object' | 'oldObject' | undefined {
  return (['object', 'oldObject'] as const).find((f) => nestsDeeperThan(request[f], max));
}
