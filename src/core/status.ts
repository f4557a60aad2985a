// Every HTTP failure annex returns is a meta.k8s.io/v1 Status, built here and only here
// (as k8s.io/apimachinery/pkg/api/errors does), so kubectl prints it like its own.

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'Invalid'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'UnsupportedMediaType'
  | 'RequestEntityTooLarge'
  | 'Timeout'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable';

export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  /** ListMeta: empty, except an expired continue token's replacement (`continue`). */
  metadata: { continue?: string };
  status: 'Failure' | 'Success';
  message: string;
  reason: StatusReason;
  details?: StatusDetails;
  code: number;
}

/** An error that carries the Status to send; thrown anywhere, rendered by one middleware. */
export class StatusError extends Error {
  readonly status: Status;
  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      ...(details ? { details } : {}),
      code,
    };
  }
  get code(): number {
    return this.status.code;
  }
}

/** A group/resource pair as Kubernetes prints it: "pods.metrics.k8s.io", or "configmaps" for core. */
export function qualifiedResource(resource: string, group: string): string {
  return group ? `${resource}.${group}` : resource;
}

export const badRequest = (message: string) => new StatusError(400, 'BadRequest', message);

export const unauthorized = (message = 'Unauthorized') =>
  new StatusError(401, 'Unauthorized', message);

// responsewriters.forbiddenMessage escapes these before the text reaches a client.
const sanitize = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Same wording as apiserver's ForbiddenStatusError: `pods.metrics.k8s.io "p" is forbidden:
 * User "u" cannot get resource "pods/log" in API group "g" ...` (the qualified resource in
 * front never carries the subresource; the one after "cannot <verb>" does).
 */
export function forbidden(
  user: string,
  verb: string,
  resource: string,
  group: string,
  scope: { namespace?: string; name?: string; subresource?: string },
  reason = '',
): StatusError {
  const res = scope.subresource ? `${resource}/${scope.subresource}` : resource;
  const where = scope.namespace
    ? ` in the namespace "${scope.namespace}"`
    : ' at the cluster scope';
  const tail = reason ? `: ${reason}` : '';
  const what = sanitize(
    `User "${user}" cannot ${verb} resource "${res}" in API group "${group}"${where}`,
  );
  const message = `${qualifiedResource(resource, group)}${scope.name ? ` "${scope.name}"` : ''} is forbidden: ${what}${tail}`;
  return new StatusError(403, 'Forbidden', message, {
    ...(scope.name ? { name: scope.name } : {}),
    group,
    kind: resource,
  });
}

/** Forbidden for a non-resource URL: `User "u" cannot get path "/openapi/v2"`. */
export function forbiddenPath(user: string, verb: string, path: string, reason = ''): StatusError {
  const tail = reason ? `: ${reason}` : '';
  return new StatusError(
    403,
    'Forbidden',
    `forbidden: ${sanitize(`User "${user}" cannot ${verb} path "${path}"`)}${tail}`,
  );
}

export const notFound = (resource: string, group: string, name: string) =>
  new StatusError(404, 'NotFound', `${qualifiedResource(resource, group)} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });

export const notFoundPath = () =>
  new StatusError(404, 'NotFound', 'the server could not find the requested resource');

export const methodNotAllowed = (verb: string, resource: string, group: string) =>
  new StatusError(
    405,
    'MethodNotAllowed',
    `${verb} is not supported on resources of kind "${qualifiedResource(resource, group)}"`,
    { group, kind: resource },
  );

/** 405 for a method a path does not serve at all (writes on a read-only API), with go-restful's text. */
export const methodNotAllowedPath = () =>
  new StatusError(
    405,
    'MethodNotAllowed',
    'the server does not allow this method on the requested resource',
  );

export const notAcceptable = (accepted: string[]) =>
  new StatusError(
    406,
    'NotAcceptable',
    `only the following media types are accepted: ${accepted.join(', ')}`,
  );

export const unsupportedMediaType = (contentType: string) =>
  new StatusError(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format: ${contentType}`,
  );

export const tooLarge = (limit: number) =>
  new StatusError(
    413,
    'RequestEntityTooLarge',
    `the request body is larger than the limit of ${limit} bytes`,
  );

export const expired = (message: string) => new StatusError(410, 'Expired', message);

export const gone = (message: string) => new StatusError(410, 'Gone', message);

/**
 * 410 for a continue token whose snapshot is gone, with etcd3 store's wording. `next`
 * resumes the same walk on the current data (rv -1), knowingly inconsistent.
 */
export function expiredContinue(next: string): StatusError {
  const err = expired(
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  );
  err.status.metadata.continue = next;
  return err;
}

/** 410 Expired for a watch from a version older than the oldest kept: "too old resource version: 10 (83935)". */
export const tooOldResourceVersion = (requested: string, oldest: string) =>
  expired(`too old resource version: ${requested} (${oldest})`);

export const internalError = (message: string) =>
  new StatusError(500, 'InternalError', `Internal error occurred: ${message}`, {
    causes: [{ message }],
  });

export const invalid = (
  kind: string,
  name: string,
  group: string,
  causes: Required<Pick<StatusCause, 'field' | 'message'>>[],
) =>
  new StatusError(
    422,
    'Invalid',
    `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
    { name, group, kind, causes: causes.map((c) => ({ reason: 'FieldValueInvalid', ...c })) },
  );
