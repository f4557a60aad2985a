// Structured logs (pino, one JSON line per event). Object contents never reach a log:
// callers log identifiers (uid, kind, namespace, name), and the redaction below is a
// second fence for anything that looks like a credential.
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { component: 'annex' },
      redact: {
        paths: ['*.authorization', '*.token', '*.key', '*.password', 'req.headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination ?? process.stderr,
  );
}

/**
 * The same logger without the redaction pass, for the one line per request whose fields
 * are all strings, numbers and booleans: every redaction path names a key inside a nested
 * object (`*.token`, `req.headers.authorization`), so on such a line it can match nothing,
 * and skipping it halves the cost of the line. Never give it an object as a field value.
 */
export function flatLines(log: Logger): Logger<never> {
  return log.child({}, { redact: [] });
}

/** Longest request-derived string a log field holds (names are ≤ 253, uids 36). */
export const LOG_FIELD_MAX = 256;

/**
 * A request-derived value as a bounded log field: strings cut to `max` characters with
 * a "…(+N)" tail saying how many were left out; anything else only by its JSON type, so
 * a value of the wrong type never carries object contents into the log.
 */
export function logField(value: unknown, max = LOG_FIELD_MAX): string {
  if (typeof value !== 'string') return value === undefined ? '' : `(${jsonType(value)})`;
  return value.length <= max ? value : `${value.slice(0, max)}…(+${value.length - max})`;
}

/** The OpenAPI type name of a JSON value: string, integer, number, boolean, object, array, null. */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * An unexpected error as log fields: its class and the code locations of its stack,
 * never its message (a message can quote the object that caused it: "Cannot create
 * property 'x' on string '<label value>'").
 */
export function errorFields(err: unknown): { error: string; at?: string[] } {
  if (!(err instanceof Error)) return { error: jsonType(err) };
  const at = (err.stack ?? '')
    .split('\n')
    .filter((l) => /^\s+at /.test(l))
    .map((l) => logField(l.trim()));
  return { error: logField(err.constructor.name), ...(at.length ? { at } : {}) };
}
