export { emptyError, maxLenError, regexError } from './messages.js';
export { maskTrailingDash, validateName } from './rules.js';
export type { NameRule, ValidateNameOptions } from './rules.js';
export {
  fieldErrorBody,
  fieldErrorMessage,
  formatBadValue,
  goQuote,
  typeErrorBody,
} from './field.js';
export type { FieldErrorType } from './field.js';
export { groupOf, isKnownKind, podSpecReferences, ruleForKind, ruleForReference } from './kinds.js';
export type { KindNameRule, ReferenceRule } from './kinds.js';
export { validateObjectName } from './validate.js';
export type { NameFieldError } from './validate.js';
