import { UsageError } from './errors.js';

/** `30s`, `500ms`, `2m`, or a bare number of seconds → milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Math.round(Number(m[1]) * unit);
}

/** The value of `--<flag>` as milliseconds; a UsageError naming the flag when it is not a duration. */
export function durationFlag(flag: string, value: string): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new UsageError(`--${flag} '${value}' is not a duration (e.g. 500ms, 10s, 2m)`);
  return ms;
}

/**
 * The value of `--<flag>` as HOST:PORT (IPv6 hosts in brackets, port 0–65535); a UsageError naming the
 * flag, with `example` as a valid value, otherwise.
 */
export function hostPortFlag(flag: string, value: string, example: string): { host: string; port: number } {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[2]) : -1;
  if (!m || port > 65535)
    throw new UsageError(`--${flag} '${value}' is not HOST:PORT (e.g. ${example}; port 0 picks a free port)`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}
