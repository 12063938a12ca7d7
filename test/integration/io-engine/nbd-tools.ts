import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { failIfExited } from '../../helpers/wait.js';

export const execFileP = promisify(execFile);

/** Run a tool to completion; resolves with stdout, rejects with stderr in the message. */
export async function run(cmd: string, args: string[], timeoutMs = 60_000): Promise<string> {
  try {
    const { stdout } = await execFileP(cmd, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}${e.stdout ?? ''}`);
  }
}

/** qemu-io with several -c commands against an NBD URI; fails on any "failed"/"Pattern verification" output. */
export async function qemuIo(uri: string, commands: string[]): Promise<string> {
  const args = ['-f', 'raw'];
  for (const c of commands) args.push('-c', c);
  args.push(uri);
  const out = await run('qemu-io', args);
  if (/Pattern verification failed|failed|error/i.test(out))
    throw new Error(`qemu-io reported a failure:\n${out}`);
  return out;
}

/** Start a long-running tool; returns a handle killable by PID. */
export function startTool(cmd: string, args: string[]) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => {
    output += d;
  });
  child.stderr.on('data', (d) => {
    output += d;
  });
  return {
    child,
    get output() {
      return output;
    },
    /** In a `waitFor` check: fails the wait at once, with the tail of the output, once the tool exited. */
    failIfExited(): Promise<null> {
      return failIfExited(child, cmd, () => output);
    },
    kill(signal: NodeJS.Signals = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
