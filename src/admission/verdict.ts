// What a webhook decides, before it is put into an AdmissionReview response.
import type { Status, StatusCause } from '../apiserver/status.js';
import type { KubeObject } from '../apiserver/types.js';
import { goQuote } from './names/index.js';
import type { AdmissionRequest } from './review.js';

export type Verdict =
  | {
      allowed: true;
      /** the mutated object; a JSON Patch is computed from it */ object?: KubeObject;
      warnings?: string[];
    }
  | { allowed: false; status: Status; warnings?: string[] };

export interface Webhook {
  /** URL path segment: served at /mutate/<name> or /validate/<name>. */
  name: string;
  type: 'mutating' | 'validating';
  admit(request: AdmissionRequest, signal: AbortSignal): Verdict | Promise<Verdict>;
}

export const allow = (warnings?: string[]): Verdict => ({
  allowed: true,
  ...(warnings?.length ? { warnings } : {}),
});

/** A denial kubectl prints exactly like built-in validation: `The <Kind> "<name>" is invalid: ...`. */
export function denyInvalid(
  request: AdmissionRequest,
  name: string,
  causes: Required<Pick<StatusCause, 'field' | 'message'>>[],
): Verdict {
  const { group, kind } = request.kind;
  const groupKind = group ? `${kind}.${group}` : kind;
  const rendered = [...new Set(causes.map((c) => `${c.field}: ${c.message}`))];
  const list = rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  return {
    allowed: false,
    status: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      // apierrors.NewInvalid quotes the name with Go's %q.
      message: `${groupKind} ${goQuote(name)} is invalid: ${list}`,
      reason: 'Invalid',
      details: {
        name,
        group,
        kind,
        causes: causes.map((c) => ({
          reason: 'FieldValueInvalid',
          message: c.message,
          field: c.field,
        })),
      },
      code: 422,
    },
  };
}
