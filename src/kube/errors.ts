// What a failed call to the kube-apiserver looks like to annex: the Status it answered
// (or one synthesized, as client-go does, when the body was not a Status).
import { UserError } from '../errors.js';

/** A meta.k8s.io/v1 Status as the server sent it (or as synthesized from a non-Status body). */
export interface KubeStatus {
  kind?: string;
  apiVersion?: string;
  status?: string;
  code: number;
  reason: string;
  message: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes?: unknown[];
    retryAfterSeconds?: number;
  };
}

export class KubeApiError extends Error {
  override name = 'KubeApiError';
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: KubeStatus,
  ) {
    super(`${method} ${path}: ${status.code} ${status.reason}: ${status.message}`);
  }
  get code(): number {
    return this.status.code;
  }
  get reason(): string {
    return this.status.reason;
  }
}

// The reasons apimachinery assigns to a code when the body is not a Status.
const REASON_BY_CODE: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  409: 'Conflict',
  410: 'Gone',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export function statusFromBody(code: number, text: string): KubeStatus {
  try {
    const parsed = JSON.parse(text) as Partial<KubeStatus>;
    if (parsed && parsed.kind === 'Status' && typeof parsed.message === 'string') {
      return {
        ...parsed,
        code: parsed.code ?? code,
        reason: parsed.reason ?? '',
        message: parsed.message,
      };
    }
  } catch {
    // not JSON: fall through
  }
  return {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code,
    reason: REASON_BY_CODE[code] ?? 'Unknown',
    message: `the server responded with status ${code}`,
  };
}

/** A kubeconfig, token file or credential plugin annex cannot use; the message names it. */
export class KubeconfigError extends UserError {
  override name = 'KubeconfigError';
}

/**
 * The API server could not be reached, or did not answer within the budget
 * (kube.timeoutSeconds): refused, reset, TLS failure, or silence.
 */
export class KubeUnreachableError extends Error {
  override name = 'KubeUnreachableError';
}

/** True for the failures a user fixes by pointing annex elsewhere: worth one line, no stack. */
export function isKubeError(e: unknown): e is Error {
  for (let cur = e, depth = 0; cur instanceof Error && depth < 5; depth++) {
    if (
      cur instanceof KubeconfigError ||
      cur instanceof KubeUnreachableError ||
      cur instanceof KubeApiError
    )
      return true;
    cur = cur.cause;
  }
  return false;
}
