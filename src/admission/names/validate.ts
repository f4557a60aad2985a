// Object-name validation per kind, as built-in strategy validation reports it.
import { fieldErrorBody, formatBadValue, goString } from './field.js';
import type { FieldErrorType } from './field.js';
import { ruleForKind } from './kinds.js';
import { validateName } from './rules.js';

export interface NameFieldError {
  field: string;
  value: string;
  detail: string;
  /** The rendered `field.Invalid` text, e.g. `metadata.name: Invalid value: "x": …`. */
  message: string;
}

/** A field error with its type and the message of its Status cause (no field path). */
export interface MetaFieldError extends NameFieldError {
  type: FieldErrorType;
  /** The Status cause's `message`: `Invalid value: "x": …`, `Required value: …`. */
  cause: string;
}

/** names.SimpleNameGenerator: a base longer than 58 bytes is cut to 58, then 5 characters follow. */
export const MAX_GENERATED_BASE_LENGTH = 58;
export const GENERATED_SUFFIX_LENGTH = 5;

/**
 * The name the API server generates from `generateName` and a 5-character suffix. The cut is
 * at a byte, as in Go, so it can split a character: the bytes are returned as Go holds them.
 */
export function generatedNameBytes(generateName: string, suffix: string): Buffer {
  const base = Buffer.from(generateName, 'utf8').subarray(0, MAX_GENERATED_BASE_LENGTH);
  return Buffer.concat([base, Buffer.from(suffix, 'utf8')]);
}

function fieldError(
  field: string,
  type: FieldErrorType,
  value: string | Uint8Array,
  detail: string,
): MetaFieldError {
  const cause =
    type === 'Invalid value'
      ? `Invalid value: ${formatBadValue(value)}: ${detail}`
      : fieldErrorBody(type, value, detail);
  const shown = typeof value === 'string' ? value : goString(value);
  return { field, type, value: shown, detail, cause, message: `${field}: ${cause}` };
}

/** The name errors of one value (a name, or a generateName judged `asPrefix`). */
function nameErrors(
  group: string,
  kind: string,
  field: string,
  value: string | Uint8Array,
  asPrefix: boolean,
): MetaFieldError[] {
  const { rule, maxLength, lengthUnit } = ruleForKind(group, kind);
  const details = validateName(rule, value, {
    prefix: asPrefix,
    ...(lengthUnit ? { unit: lengthUnit } : {}),
  });
  const bytes = typeof value === 'string' ? Buffer.byteLength(value) : value.length;
  if (maxLength !== undefined && !asPrefix && bytes > maxLength) {
    details.push(`must be no more than ${maxLength} characters`);
  }
  return details.map((d) => fieldError(field, 'Invalid value', value, d));
}

/**
 * Validate `metadata.name` (or `metadata.generateName` with `prefix`) of a `group/kind` object,
 * including CronJob's 52-character create-time limit. Empty list = valid.
 */
export function validateObjectName(
  group: string,
  kind: string,
  name: string,
  options: { prefix?: boolean } = {},
): NameFieldError[] {
  const prefix = options.prefix === true;
  const field = prefix ? 'metadata.generateName' : 'metadata.name';
  const errors = nameErrors(group, kind, field, name, prefix);
  const label = ruleForKind(group, kind).nameLabel;
  if (label && !prefix) errors.push(...labelErrors(label.field, name));
  return errors.map(({ field, value, detail, message }) => ({ field, value, detail, message }));
}

function pathSegmentErrors(
  field: string,
  value: string | Uint8Array,
  prefix: boolean,
): MetaFieldError[] {
  return validateName('path-segment', value, { prefix }).map((d) =>
    fieldError(field, 'Invalid value', value, d),
  );
}

function labelErrors(field: string, value: string | Uint8Array): MetaFieldError[] {
  return validateName('label-value', value).map((d) =>
    fieldError(field, 'Invalid value', value, d),
  );
}

export interface ObjectMetaNames {
  /** The object's name as the API server stores and prints it (a generated one included). */
  name: string;
  /** The same name as Go holds it, for `%q` (differs only when a cut split a character). */
  nameBytes: Buffer;
  /** Whether the name came from generateName. */
  generated: boolean;
  /** Field errors in the API server's order; empty = valid. */
  errors: MetaFieldError[];
}

/**
 * What a create's strategy validation says about an object's `name` and `generateName`, as
 * measured on v1.37.2: neither given → `metadata.name: Required value`; a generateName is
 * judged by the kind's prefix rule (before the name's errors) and the generated name —
 * `generateName` cut to 58 bytes plus `suffix` — by the name rule. `suffix` stands for the
 * API server's 5 random characters; any 5 of its alphabet give the same verdict.
 */
export function validateObjectMeta(
  group: string,
  kind: string,
  meta: { name?: string | undefined; generateName?: string | undefined },
  suffix: string,
): ObjectMetaNames {
  const generateName = meta.generateName ?? '';
  const given = meta.name ?? '';
  const generated = given === '' && generateName !== '';
  const nameBytes = generated ? generatedNameBytes(generateName, suffix) : Buffer.from(given);
  const name = goString(nameBytes);
  if (given === '' && generateName === '') {
    const required = fieldError(
      'metadata.name',
      'Required value',
      '',
      'name or generateName is required',
    );
    return { name, nameBytes, generated, errors: [required] };
  }
  const rules = ruleForKind(group, kind);
  const value = generated ? nameBytes : given;
  // The kind's strategy validation first.
  const errors: MetaFieldError[] = [];
  const mode = rules.generateName ?? 'prefix';
  if (generateName !== '' && mode !== 'ignored') {
    errors.push(
      ...nameErrors(group, kind, 'metadata.generateName', generateName, mode === 'prefix'),
    );
  }
  errors.push(...nameErrors(group, kind, 'metadata.name', value, false));
  const label = rules.nameLabel;
  if (label && (!generated || label.generated)) errors.push(...labelErrors(label.field, value));
  if (errors.length > 0) return { name, nameBytes, generated, errors };
  // Only when it passes, rest.BeforeCreate's generic ObjectMeta check: path segments.
  if (generateName !== '')
    errors.push(...pathSegmentErrors('metadata.generateName', generateName, true));
  errors.push(...pathSegmentErrors('metadata.name', value, false));
  return { name, nameBytes, generated, errors };
}
