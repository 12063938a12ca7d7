import pino, { type Logger } from 'pino';

export type { Logger };

const SECRET_FIELDS = [
  'secrets',
  'secret',
  'password',
  'token',
  'credentials',
  'authorization',
  'accessKeyId',
  'secretAccessKey',
  'sessionToken',
  'access_key_id',
  'secret_access_key',
  'session_token',
];
// pino's redaction takes explicit paths: the field itself and up to three levels of nesting.
const REDACTED_PATHS = SECRET_FIELDS.flatMap((f) => [f, `*.${f}`, `*.*.${f}`, `*.*.*.${f}`]);

/**
 * Structured JSON logs for daemons (one line per event on stdout). Anything that looks like a
 * credential is redacted here, once, never at call sites.
 */
export function createLogger(component: string, level = process.env.STORCTL_LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { component, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  });
}
