// What a webhook decides, before it is put into an AdmissionReview response.
import { StatusError, type Status, type StatusCause } from '../core/status.js';
import type { KubeObject } from '../core/types.js';
import { fieldErrorBody, goQuote, goString } from './names/index.js';
import type { AdmissionRequest, Verdict } from '../core/webhook.js';

export type { Verdict } from '../core/webhook.js';

export const allow = (warnings?: string[]): Verdict => ({
  allowed: true,
  ...(warnings?.length ? { warnings } : {}),
});

/** A denial kubectl prints exactly like built-in validation: `The <Kind> "<name>" is invalid: ...`. */
export type FieldCause = Required<Pick<StatusCause, 'field' | 'message'>>;

/** `field: Invalid value: <value>: <detail>`, as apimachinery's field.Invalid renders it. */
export const invalidField = (field: string, value: unknown, detail: string): FieldCause => ({
  field,
  message: fieldErrorBody('Invalid value', value, detail),
});

/** The object's name as the API server will report it (generateName is resolved by then). */
function nameOf(request: AdmissionRequest): string {
  const name = request.name || request.object?.metadata?.name;
  return typeof name === 'string' ? name : '';
}

export function denyInvalid(request: AdmissionRequest, causes: FieldCause[]): Verdict;
export function denyInvalid(
  request: AdmissionRequest,
  name: string | Uint8Array,
  causes: FieldCause[],
): Verdict;
export function denyInvalid(
  request: AdmissionRequest,
  nameOrCauses: string | Uint8Array | FieldCause[],
  maybeCauses?: FieldCause[],
): Verdict {
  const [name, causes] = Array.isArray(nameOrCauses)
    ? [nameOf(request), nameOrCauses]
    : [nameOrCauses, maybeCauses ?? []];
  const { group, kind } = request.kind;
  return { allowed: false, status: invalidStatus(group, kind, name, causes) };
}

/**
 * apierrors.NewInvalid: `<Kind>[.<group>] "<name>" is invalid: <cause>` (`[c1, c2]` for
 * several distinct causes), the name quoted with Go's %q (bytes as Go holds them), and one
 * Status cause per field error (reason FieldValueInvalid unless the cause says otherwise).
 */
export function invalidStatus(
  group: string,
  kind: string,
  name: string | Uint8Array,
  causes: readonly (FieldCause & { reason?: string })[],
): Status {
  const groupKind = group ? `${kind}.${group}` : kind;
  const rendered = [...new Set(causes.map((c) => `${c.field}: ${c.message}`))];
  const list = rendered.length === 1 ? rendered[0] : `[${rendered.join(', ')}]`;
  const shown = typeof name === 'string' ? name : goString(name);
  return new StatusError(422, 'Invalid', `${groupKind} ${goQuote(name)} is invalid: ${list}`, {
    // omitempty, as Go marshals StatusDetails
    ...(shown ? { name: shown } : {}),
    ...(group ? { group } : {}),
    kind,
    causes: causes.map((c) => ({
      reason: c.reason ?? 'FieldValueInvalid',
      message: c.message,
      field: c.field,
    })),
  }).status;
}

/** A denial with a plain message (403 Forbidden unless another code is given), as `kubectl` prints it. */
export function deny(message: string, code = 403, warnings?: string[]): Verdict {
  const reason = code === 400 ? 'BadRequest' : code === 422 ? 'Invalid' : 'Forbidden';
  return {
    allowed: false,
    status: new StatusError(code, reason, message).status,
    ...(warnings?.length ? { warnings } : {}),
  };
}

/** Allows the request as `object`: a mutating webhook's answer; annex computes the JSON Patch. */
export const mutate = (object: KubeObject, warnings?: string[]): Verdict => ({
  allowed: true,
  object,
  ...(warnings?.length ? { warnings } : {}),
});
