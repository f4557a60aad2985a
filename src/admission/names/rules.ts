// Kubernetes' name rules (apimachinery util/validation + api/validation/generic.go, v1.37).
// Lengths are Go string lengths, i.e. UTF-8 bytes, so every check runs on a "byte string"
// (one JS char per UTF-8 byte): the ASCII-only regexes then match exactly as Go's do.
import { emptyError, maxLenError, regexError } from './messages.js';

export type NameRule =
  | 'dns1123-subdomain'
  | 'dns1123-label'
  | 'dns1035-label'
  | 'path-segment'
  | 'qualified-name'
  | 'label-key'
  | 'label-value';

export const DNS1123_LABEL_MAX_LENGTH = 63;
export const DNS1123_SUBDOMAIN_MAX_LENGTH = 253;
export const DNS1035_LABEL_MAX_LENGTH = 63;
export const QUALIFIED_NAME_MAX_LENGTH = 63;
export const LABEL_VALUE_MAX_LENGTH = 63;

const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1035LabelFmt = '[a-z]([-a-z0-9]*[a-z0-9])?';
const qualifiedNameFmt = '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]';
const labelValueFmt = `(${qualifiedNameFmt})?`;

const dns1123LabelRe = new RegExp(`^${dns1123LabelFmt}$`);
const dns1123SubdomainRe = new RegExp(`^${dns1123SubdomainFmt}$`);
const dns1035LabelRe = new RegExp(`^${dns1035LabelFmt}$`);
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);
const labelValueRe = new RegExp(`^${labelValueFmt}$`);

const dns1123LabelErrMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const dns1123SubdomainErrMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const dns1035LabelErrMsg =
  "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const qualifiedNameErrMsg =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** The UTF-8 bytes of `s`, one JS char per byte (Go's view of a string). */
function bytesOf(s: string | Uint8Array): string {
  return (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s)).toString('latin1');
}

type Unit = 'characters' | 'bytes';

function dns1123Label(b: string, unit: Unit = 'characters'): string[] {
  const errs: string[] = [];
  if (b.length > DNS1123_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1123_LABEL_MAX_LENGTH, unit));
  if (!dns1123LabelRe.test(b)) {
    // A valid subdomain that is not a label can only be wrong because of its dots.
    if (dns1123SubdomainRe.test(b)) errs.push('must not contain dots');
    else errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, 'my-name', '123-abc'));
  }
  return errs;
}

function dns1123Subdomain(b: string, unit: Unit = 'characters'): string[] {
  const errs: string[] = [];
  if (b.length > DNS1123_SUBDOMAIN_MAX_LENGTH) {
    errs.push(maxLenError(DNS1123_SUBDOMAIN_MAX_LENGTH, unit));
  }
  if (!dns1123SubdomainRe.test(b)) {
    errs.push(regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, 'example.com'));
  }
  return errs;
}

function dns1035Label(b: string): string[] {
  const errs: string[] = [];
  if (b.length > DNS1035_LABEL_MAX_LENGTH) errs.push(maxLenError(DNS1035_LABEL_MAX_LENGTH));
  if (!dns1035LabelRe.test(b)) {
    errs.push(regexError(dns1035LabelErrMsg, dns1035LabelFmt, 'my-name', 'abc-123'));
  }
  return errs;
}

/**
 * IsQualifiedName (`legacy`: "a qualified name …", lengths in characters) or, from 1.35,
 * content.IsLabelKey ("a valid label key …", lengths in bytes).
 */
function qualifiedName(b: string, labelKey: boolean): string[] {
  const unit = labelKey ? 'bytes' : 'characters';
  const nameRegexError = regexError(
    qualifiedNameErrMsg,
    qualifiedNameFmt,
    'MyName',
    'my.name',
    '123-abc',
  );
  const errs: string[] = [];
  const parts = b.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push(`prefix part ${emptyError()}`);
    else errs.push(...dns1123Subdomain(prefix).map((m) => `prefix part ${m}`));
  } else {
    const what = labelKey ? 'a valid label key' : 'a qualified name';
    return [
      `${what} ${nameRegexError} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) errs.push(`name part ${emptyError()}`);
  else if (name.length > QUALIFIED_NAME_MAX_LENGTH) {
    errs.push(`name part ${maxLenError(QUALIFIED_NAME_MAX_LENGTH, unit)}`);
  }
  if (!qualifiedNameRe.test(name)) errs.push(`name part ${nameRegexError}`);
  return errs;
}

function labelValue(b: string): string[] {
  const errs: string[] = [];
  if (b.length > LABEL_VALUE_MAX_LENGTH) errs.push(maxLenError(LABEL_VALUE_MAX_LENGTH, 'bytes'));
  if (!labelValueRe.test(b)) {
    errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  }
  return errs;
}

/** IsValidPathSegmentName, or IsValidPathSegmentPrefix for a generateName. */
function pathSegment(name: string, prefix: boolean): string[] {
  if (!prefix) {
    for (const illegal of ['.', '..']) {
      if (name === illegal) return [`may not be '${illegal}'`];
    }
  }
  const errs: string[] = [];
  for (const illegal of ['/', '%']) {
    if (name.includes(illegal)) errs.push(`may not contain '${illegal}'`);
  }
  return errs;
}

/**
 * maskTrailingDash: a generateName ending in '-' has its last *two* bytes replaced by 'a'
 * (Kubernetes' own quirk), so `abc-` is checked as `aba`.
 */
export function maskTrailingDash(name: string): string {
  const b = bytesOf(name);
  const masked = b.length > 1 && b.endsWith('-') ? `${b.slice(0, -2)}a` : b;
  return Buffer.from(masked, 'latin1').toString('utf8');
}

export interface ValidateNameOptions {
  /** The value is a `generateName` (apimachinery's `prefix=true`). */
  prefix?: boolean;
  /** How the length error counts: `characters` (default) or `bytes` (declarative validation). */
  unit?: 'characters' | 'bytes';
}

/**
 * Validate `name` with `rule` the way the API server does. Returns the detail messages, in
 * Kubernetes' order; an empty list means valid. Each message becomes one field error.
 * Bytes are accepted for names Go holds as invalid UTF-8 (a generated name whose prefix was
 * cut inside a character).
 */
export function validateName(
  rule: NameRule,
  name: string | Uint8Array,
  options: ValidateNameOptions = {},
): string[] {
  const prefix = options.prefix === true;
  const b = bytesOf(name);
  // Byte-level masking: a multi-byte character before the dash is cut, as in Go.
  const masked = prefix && b.length > 1 && b.endsWith('-') ? `${b.slice(0, -2)}a` : b;
  switch (rule) {
    case 'dns1123-subdomain':
      return dns1123Subdomain(masked, options.unit);
    case 'dns1123-label':
      return dns1123Label(masked, options.unit);
    case 'dns1035-label':
      return dns1035Label(masked);
    case 'path-segment':
      return pathSegment(b, prefix);
    case 'qualified-name':
      return qualifiedName(b, false);
    case 'label-key':
      return qualifiedName(b, true);
    case 'label-value':
      return labelValue(b);
  }
}
