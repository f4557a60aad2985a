// Object-name validation per kind, as built-in strategy validation reports it.
import { fieldErrorMessage } from './field.js';
import { ruleForKind } from './kinds.js';
import { validateName } from './rules.js';

export interface NameFieldError {
  field: string;
  value: string;
  detail: string;
  /** The rendered `field.Invalid` text, e.g. `metadata.name: Invalid value: "x": …`. */
  message: string;
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
  const { rule, maxLength } = ruleForKind(group, kind);
  const field = options.prefix === true ? 'metadata.generateName' : 'metadata.name';
  const details = validateName(rule, name, options);
  if (maxLength !== undefined && options.prefix !== true && Buffer.byteLength(name) > maxLength) {
    details.push(`must be no more than ${maxLength} characters`);
  }
  const errors = details.map((detail) => ({
    field,
    value: name,
    detail,
    message: fieldErrorMessage(field, name, detail),
  }));
  // The API server labels every Namespace kubernetes.io/metadata.name=<name> before it
  // validates, so a bad namespace name is also a bad label value, reported at metadata.labels.
  if (group === '' && kind === 'Namespace' && options.prefix !== true) {
    for (const detail of validateName('label-value', name)) {
      errors.push({
        field: 'metadata.labels',
        value: name,
        detail,
        message: fieldErrorMessage('metadata.labels', name, detail),
      });
    }
  }
  return errors;
}
