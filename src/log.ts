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
