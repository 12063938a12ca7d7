import { execFile } from 'node:child_process';

export class CommandError extends Error {
  constructor(
    readonly argv: string[],
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    super(
      `${argv.join(' ')} failed${exitCode === null ? '' : ` (exit ${exitCode})`}: ${stderr.trim() || 'no output'}`,
    );
    this.name = 'CommandError';
  }
}

/** Run a system tool (argv, never a shell); its stderr is in the error. */
export function run(
  argv: string[],
  { timeoutMs = 60_000, okCodes = [0] }: { timeoutMs?: number; okCodes?: number[] } = {},
): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve, reject) => {
    execFile(argv[0], argv.slice(1), { timeout: timeoutMs, maxBuffer: 4 << 20 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      if (code !== null && okCodes.includes(code)) return resolve({ stdout, stderr, code });
      reject(new CommandError(argv, code, String(stderr || (err as Error)?.message || '')));
    });
  });
}
