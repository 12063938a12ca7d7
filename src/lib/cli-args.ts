import { Flags } from '@oclif/core';
import type { OptionFlag } from '@oclif/core/interfaces';
import { UsageError } from './errors.js';

/*
 * Parsers of flag and argument values shared by the commands. Each one either returns the value or
 * throws a UsageError (exit code 2) that names the flag or argument, quotes the input and shows a
 * valid example.
 */

// ---- durations --------------------------------------------------------------------------------

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
const DURATION_EXAMPLES = 'e.g. 500ms, 10s, 2m';

/** `30s`, `500ms`, `2m`, `1h`, `1.5s`, or a bare number of seconds → milliseconds; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) return undefined;
  return Math.round(Number(m[1]) * DURATION_UNITS[(m[2] ?? 's') as keyof typeof DURATION_UNITS]);
}

/** Milliseconds as the shortest exact duration text: 300000 → `5m`, 1500 → `1500ms`, 0 → `0s`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  for (const unit of ['h', 'm', 's'] as const)
    if (ms % DURATION_UNITS[unit] === 0) return `${ms / DURATION_UNITS[unit]}${unit}`;
  return `${ms}ms`;
}

/** The value of `--<flag>` as milliseconds; a UsageError naming the flag when it is not a duration. */
export function durationArg(flag: string, value: string, { positive = false } = {}): number {
  const ms = parseDuration(value);
  if (ms === undefined) throw new UsageError(`--${flag} '${value}' is not a duration (${DURATION_EXAMPLES})`);
  if (positive && ms <= 0)
    throw new UsageError(`--${flag} '${value}' must be longer than 0 (${DURATION_EXAMPLES})`);
  return ms;
}

interface DurationFlagOptions {
  description: string;
  env?: string;
  /** Refuse 0 (a timeout or a wait, where 0 would mean "give up at once"). */
  positive?: boolean;
}

/**
 * The one duration flag: `--timeout 90s`, `--node-deadline 500ms`, `--mount-timeout 2m`, or a bare
 * number of seconds (so `--timeout 300` keeps meaning 300 s). Its value is milliseconds, and so is
 * `default`, which help shows as a duration at the end of the description: `(default 5m)`.
 */
export function durationFlag(options: DurationFlagOptions & { default: number }): OptionFlag<number>;
export function durationFlag(options: DurationFlagOptions): OptionFlag<number | undefined>;
export function durationFlag(
  options: DurationFlagOptions & { default?: number },
): OptionFlag<number> | OptionFlag<number | undefined> {
  const { positive, default: def, description, ...rest } = options;
  return Flags.custom<number>({
    ...rest,
    parse: async (input, _context, flag) => durationArg(flag.name, input, { positive }),
    ...(def === undefined
      ? { description }
      : {
          description: `${description} (default ${formatDuration(def)})`,
          default: def,
          // The manifest (and so help) would show the default in milliseconds, and a defaultHelp
          // function makes oclif load the command's code for every --help: the description says it.
          noCacheDefault: true,
        }),
  })();
}

// ---- positional or flag -----------------------------------------------------------------------

/**
 * A value a command takes as kubectl-mayastor does (a positional argument) or as `--<flag>`:
 * either, or both when they agree; undefined when neither. `show` writes a value into the refusal.
 */
export function positionalOrFlag<T>(
  what: string,
  flag: string,
  positional: T | undefined,
  fromFlag: T | undefined,
  show: (v: T) => string = String,
): T | undefined {
  if (positional !== undefined && fromFlag !== undefined && positional !== fromFlag)
    throw new UsageError(
      `${what} given twice, as ${show(positional)} and as --${flag} ${show(fromFlag)}: give it once`,
    );
  return positional ?? fromFlag;
}

// ---- labels -----------------------------------------------------------------------------------

/**
 * A cordon or drain label given as kubectl-mayastor takes it (`cordon node ID LABEL`) or as
 * `--label` (positionalOrFlag); `fallback` when neither.
 */
export function cordonLabel(
  positional: string | undefined,
  flag: string | undefined,
  fallback: string,
): string;
export function cordonLabel(positional: string | undefined, flag: string | undefined): string | undefined;
export function cordonLabel(positional: string | undefined, flag: string | undefined, fallback?: string) {
  const label = positionalOrFlag('label', 'label', positional, flag, (v) => `'${v}'`) ?? fallback;
  if (label === '') throw new UsageError('the label must not be empty');
  return label;
}

/** One label edit, as `node label` and `pool label` take it (kubectl's syntax). */
export type LabelEdit = { op: 'set'; key: string; value: string } | { op: 'remove'; key: string };

/** `KEY=VALUE` split at its first `=` (the value may be empty or hold more `=`); undefined otherwise. */
function splitLabel(text: string): { key: string; value: string } | undefined {
  const eq = text.indexOf('=');
  return eq > 0 ? { key: text.slice(0, eq), value: text.slice(eq + 1) } : undefined;
}

/**
 * `KEY=VALUE` (set) or `KEY-` (remove). Keys and values are not checked here: core checks them by
 * kubectl-mayastor's rules, and its error names the rule.
 */
export function parseLabelEdit(text: string): LabelEdit {
  const set = splitLabel(text);
  if (set) return { op: 'set', ...set };
  if (!text.includes('=') && text.length > 1 && text.endsWith('-'))
    return { op: 'remove', key: text.slice(0, -1) };
  throw new UsageError(`label '${text}' is neither KEY=VALUE nor KEY-`);
}

/**
 * Repeated `--<flag> KEY=VALUE` flags as a label map (undefined when none was given, so a request
 * can leave labels out); a later value of a key wins.
 */
export function parseLabels(
  values: string[] | undefined,
  flag = 'label',
): Record<string, string> | undefined {
  if (!values) return undefined;
  const labels: Record<string, string> = {};
  for (const text of values) {
    const label = splitLabel(text);
    if (!label) throw new UsageError(`--${flag} '${text}' is not KEY=VALUE`);
    labels[label.key] = label.value;
  }
  return labels;
}

/** A label key part or value by kubectl-mayastor's rules: alphanumeric edges, `[-._]` inside, ≤ 63 chars. */
const LABEL_PART = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** A `--selector k=v,k2=v2` (a key may hold one `/` prefix); undefined when none was given. */
export function parseSelector(text: string | undefined): Record<string, string> | undefined {
  if (!text) return undefined;
  const out: Record<string, string> = {};
  for (const part of text.split(',')) {
    const [key, value, ...rest] = part.split('=');
    const keyOk = key?.split('/').length <= 2 && key.split('/').every((p) => LABEL_PART.test(p));
    if (rest.length || value === undefined || !keyOk || !LABEL_PART.test(value)) {
      throw new UsageError(
        `invalid selector '${part}': expected key=value (alphanumeric edges, [-._] inside, ≤63 chars)`,
        {
          suggestions: ['storctl get pools --selector openebs.io/created-by=operator-diskpool'],
        },
      );
    }
    out[key] = value;
  }
  return out;
}

// ---- endpoints --------------------------------------------------------------------------------

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
