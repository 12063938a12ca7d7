import pino, { type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs for daemons (one line per event on stdout). Anything that looks like a
 * credential is redacted here, once, never at call sites.
 */
export function createLogger(component: string, level = process.env.STORCTL_LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { component, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'secrets',
        '*.secrets',
        'secret',
        '*.secret',
        'password',
        '*.password',
        'token',
        '*.token',
        'accessKeyId',
        'secretAccessKey',
        '*.secretAccessKey',
        '*.accessKeyId',
        'sessionToken',
        '*.sessionToken',
      ],
      censor: '[redacted]',
    },
  });
}
