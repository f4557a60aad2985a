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
  metadata: Record<string, never>;
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

/** Same wording as apiserver's forbidden(): `User "u" cannot list resource "pods" in API group "g" ...`. */
export function forbidden(
  user: string,
  verb: string,
  resource: string,
  group: string,
  scope: { namespace?: string; name?: string; subresource?: string },
  reason = '',
): StatusError {
  const res = scope.subresource ? `${resource}/${scope.subresource}` : resource;
  const where = scope.namespace ? ` in the namespace "${scope.namespace}"` : ' at the cluster scope';
  const tail = reason ? `: ${reason}` : '';
  const message = `${qualifiedResource(res, group)}${scope.name ? ` "${scope.name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "${res}" in API group "${group}"${where}${tail}`;
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
    `forbidden: User "${user}" cannot ${verb} path "${path}"${tail}`,
  );
}

export const notFound = (resource: string, group: string, name: string) =>
  new StatusError(404, 'NotFound', `${qualifiedResource(resource, group)} "${name}" not found`, {
    name,
    group,
    kind: resource,
  });

export const notFoundPath = () => new StatusError(404, 'NotFound', 'the server could not find the requested resource');

export const methodNotAllowed = (verb: string, resource: string, group: string) =>
  new StatusError(
    405,
    'MethodNotAllowed',
    `${verb} is not supported on resources of kind "${qualifiedResource(resource, group)}"`,
    { group, kind: resource },
  );

export const notAcceptable = (accepted: string[]) =>
  new StatusError(
    406,
    'NotAcceptable',
    `only the following media types are accepted: ${accepted.join(', ')}`,
  );

export const unsupportedMediaType = (contentType: string) =>
  new StatusError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format: ${contentType}`);

export const tooLarge = (limit: number) =>
  new StatusError(413, 'RequestEntityTooLarge', `the request body is larger than the limit of ${limit} bytes`);

export const expired = (message: string) => new StatusError(410, 'Expired', message);

export const gone = (message: string) => new StatusError(410, 'Gone', message);

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
