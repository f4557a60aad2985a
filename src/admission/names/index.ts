export { emptyError, maxLenError, regexError } from './messages.js';
export { maskTrailingDash, validateName } from './rules.js';
export type { NameRule, ValidateNameOptions } from './rules.js';
export {
  causeReason,
  fieldErrorBody,
  fieldErrorMessage,
  formatBadValue,
  goQuote,
  goString,
  OmittedValue,
  typeErrorBody,
} from './field.js';
export type { FieldErrorType } from './field.js';
export { groupOf, isKnownKind, podSpecReferences, ruleForKind, ruleForReference } from './kinds.js';
export type { KindNameRule, ReferenceRule } from './kinds.js';
export {
  GENERATED_SUFFIX_LENGTH,
  MAX_GENERATED_BASE_LENGTH,
  generatedNameBytes,
  validateObjectMeta,
  validateObjectName,
} from './validate.js';
export type { MetaFieldError, NameFieldError, ObjectMetaNames } from './validate.js';
