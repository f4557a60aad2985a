// The AdmissionReview contract (admission.k8s.io v1 and v1beta1): parse what the API
// server sends, refuse what is not a review with a 400 Status, and answer in the
// request's own apiVersion with its uid (v1 servers check both).
import { badRequest, type Status } from '../apiserver/status.js';
import type { KubeObject } from '../apiserver/types.js';

export const REVIEW_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type ReviewVersion = (typeof REVIEW_VERSIONS)[number];

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  name?: string;
  namespace?: string;
  operation: Operation;
  userInfo?: { username?: string; uid?: string; groups?: string[] };
  object?: KubeObject | null;
  oldObject?: KubeObject | null;
  dryRun?: boolean;
}

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

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Checks the envelope and the request fields annex relies on; the object itself is the webhook's business. */
export function parseReview(body: unknown): {
  apiVersion: ReviewVersion;
  request: AdmissionRequest;
} {
  if (!isObject(body)) throw badRequest('the request body must be a JSON AdmissionReview object');
  const { apiVersion, kind, request } = body;
  if (kind !== 'AdmissionReview') {
    throw badRequest(`expected kind "AdmissionReview", got ${JSON.stringify(kind ?? null)}`);
  }
  if (!REVIEW_VERSIONS.includes(apiVersion as ReviewVersion)) {
    throw badRequest(
      `unsupported AdmissionReview apiVersion ${JSON.stringify(apiVersion ?? null)}: expected one of ${REVIEW_VERSIONS.join(', ')}`,
    );
  }
  if (!isObject(request)) throw badRequest('AdmissionReview has no request');
  if (typeof request.uid !== 'string' || request.uid === '') {
    throw badRequest('AdmissionReview request.uid is missing');
  }
  if (!OPERATIONS.has(request.operation as string)) {
    throw badRequest(
      `AdmissionReview request.operation ${JSON.stringify(request.operation ?? null)} is not one of CREATE, UPDATE, DELETE, CONNECT`,
    );
  }
  const gvk = request.kind;
  if (!isObject(gvk) || typeof gvk.kind !== 'string' || typeof gvk.version !== 'string') {
    throw badRequest('AdmissionReview request.kind must be {group, version, kind}');
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
