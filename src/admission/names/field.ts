// field.Error rendering (apimachinery util/validation/field/errors.go): `<path>: <Type>: <value>: <detail>`.
import { jsonType } from '../../log.js';

export type FieldErrorType =
  | 'Invalid value'
  | 'Required value'
  | 'Unsupported value'
  | 'Forbidden'
  | 'Too long'
  | 'Duplicate value'
  | 'Not found'
  | 'Too many'
  | 'Internal error';

const namedEscapes: Record<number, string> = {
  0x07: '\\a',
  0x08: '\\b',
  0x0c: '\\f',
  0x0a: '\\n',
  0x0d: '\\r',
  0x09: '\\t',
  0x0b: '\\v',
  0x22: '\\"',
  0x5c: '\\\\',
};

// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols and the ASCII space.
// Everything else, and `"` and `\`, is escaped; with the u flag a lone surrogate is one
// code point and falls outside every class.
const needsEscape = /["\\]|[^\p{L}\p{M}\p{N}\p{P}\p{S} ]/gu;

function escapeOf(ch: string): string {
  const cp = ch.codePointAt(0) ?? 0;
  const named = namedEscapes[cp];
  if (named !== undefined) return named;
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp >= 0xd800 && cp <= 0xdfff) return '\\ufffd'; // lone surrogate: invalid UTF-8 in Go
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\U${cp.toString(16).padStart(8, '0')}`;
}

/**
 * Go's `%q` (strconv.Quote) for a string. One regex replace, so the result is built flat
 * in one pass: appending char by char made a rope of one node per character (~32 bytes
 * each), 200 MB for a 6.5 MiB name.
 */
export function goQuote(s: string | Uint8Array): string {
  if (typeof s === 'string') return `"${s.replace(needsEscape, escapeOf)}"`;
  return `"${goRunes(s)
    .map((r) =>
      typeof r === 'number'
        ? `\\x${r.toString(16).padStart(2, '0')}`
        : r.replace(needsEscape, escapeOf),
    )
    .join('')}"`;
}

/**
 * Bytes as Go's encoding/json writes them: each byte of invalid UTF-8 becomes U+FFFD (Node's
 * decoder would merge a cut character into one).
 */
export function goString(bytes: Uint8Array): string {
  return goRunes(bytes)
    .map((r) => (typeof r === 'number' ? '\ufffd' : r))
    .join('');
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Go's view of bytes as runes: valid UTF-8 runs as text, each invalid byte as its number. */
function goRunes(bytes: Uint8Array): (string | number)[] {
  const out: (string | number)[] = [];
  let start = 0;
  let i = 0;
  const flush = (end: number) => {
    if (end > start) out.push(strictUtf8.decode(bytes.subarray(start, end)));
  };
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    const width = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
    let valid = width > 0 && i + width <= bytes.length;
    if (valid && width > 1) {
      try {
        strictUtf8.decode(bytes.subarray(i, i + width));
      } catch {
        valid = false;
      }
    }
    if (valid) {
      i += width;
      continue;
    }
    flush(i);
    out.push(lead);
    i += 1;
    start = i;
  }
  flush(i);
  return out;
}

/**
 * A value too large to quote, printed as `<value omitted: N bytes>`: a stand-in with a
 * String() method, as field.Error prints a fmt.Stringer bad value with %s.
 */
export class OmittedValue {
  constructor(readonly bytes: number) {}
  toString(): string {
    return `<value omitted: ${this.bytes} bytes>`;
  }
}

/** How field.Error prints a bad value: strings %q, numbers and booleans plain, the rest JSON. */
export function formatBadValue(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (value instanceof OmittedValue) return value.toString();
  if (typeof value === 'string' || value instanceof Uint8Array) return goQuote(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** The error body without the field path, as used in a Status cause's `message`. */
export function fieldErrorBody(type: FieldErrorType, value: unknown, detail = ''): string {
  // Required, Forbidden, Too long and Internal error never print the bad value.
  const showsValue = !['Required value', 'Forbidden', 'Too long', 'Internal error'].includes(type);
  let s: string = showsValue ? `${type}: ${formatBadValue(value)}` : type;
  if (detail.length > 0) s += `: ${detail}`;
  return s;
}

/** `field.Invalid(path, value, detail).Error()`, e.g. `metadata.name: Invalid value: "x": …`. */
export function fieldErrorMessage(field: string, value: unknown, detail: string): string {
  return `${field}: ${fieldErrorBody('Invalid value', value, detail)}`;
}

/**
 * A value of the wrong JSON type, in the words of the API server's schema validation
 * (`Invalid value: "string": metadata.labels in body must be of type object: "string"`):
 * it names the field and the type found, never the value.
 */
export function typeErrorBody(field: string, value: unknown, expected: string): string {
  const found = goQuote(jsonType(value));
  return `Invalid value: ${found}: ${field} in body must be of type ${expected}: ${found}`;
}

const causeReasons: Record<FieldErrorType, string> = {
  'Invalid value': 'FieldValueInvalid',
  'Required value': 'FieldValueRequired',
  'Unsupported value': 'FieldValueNotSupported',
  Forbidden: 'FieldValueForbidden',
  'Too long': 'FieldValueTooLong',
  'Duplicate value': 'FieldValueDuplicate',
  'Not found': 'FieldValueNotFound',
  'Too many': 'FieldValueTooMany',
  'Internal error': 'InternalError',
};

/** The Status cause `reason` of a field error type (`Required value` → `FieldValueRequired`). */
export function causeReason(type: FieldErrorType): string {
  return causeReasons[type];
}
