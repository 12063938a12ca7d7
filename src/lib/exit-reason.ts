/**
 * Why a process ended, from the last lines it printed (at most 500 characters):
 * - a Node.js crash (an uncaught exception: a stack trace, then a "Node.js vX" trailer): the
 *   error's own line, e.g. `Error [ERR_MODULE_NOT_FOUND]: Cannot find module …`, not the trailer;
 * - storctl's `Error: …` line and its `Try: …` hints (not the "Re-run with --log-level debug"
 *   trailer);
 * - else the last line: a JSON log line's `err` (or `msg`), or the line itself.
 */
export function exitReason(printed: string[]): string | undefined {
  const lines = printed.filter((l) => l.trim());
  const last = lines.at(-1);
  if (last === undefined) return undefined;
  if (/^Node\.js v\d/.test(last)) {
    // Node prints the throwing source line, a caret under it, then the error's own line.
    const caret = lines.findLastIndex((l) => /^\s*\^+\s*$/.test(l));
    const error = caret >= 0 ? lines[caret + 1] : undefined;
    if (error && error !== last) return error.replace(/ \{$/, '').slice(0, 500);
  }
  const error = lines.findLastIndex((l) => l.startsWith('Error: '));
  if (error >= 0) {
    const hints = lines.slice(error + 1).filter((l) => l.startsWith('Try: '));
    return [lines[error].slice('Error: '.length), ...hints.map((h) => `try: ${h.slice('Try: '.length)}`)]
      .join('; ')
      .slice(0, 500);
  }
  try {
    const v = JSON.parse(last) as { err?: unknown; msg?: unknown };
    return String(v.err ?? v.msg ?? last).slice(0, 500);
  } catch {
    return last.slice(0, 500);
  }
}
