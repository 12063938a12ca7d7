import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** qemu-io against an NBD target URI; returns stdout, throws when a pattern check fails. */
export async function qemuIo(uri: string, ...cmds: string[]): Promise<string> {
  const args = ['-f', 'raw', ...cmds.flatMap((c) => ['-c', c]), uri];
  const { stdout } = await exec('qemu-io', args, { timeout: 60_000 });
  if (/Pattern verification failed|error/i.test(stdout))
    throw new Error(`qemu-io ${cmds.join('; ')}: ${stdout}`);
  return stdout;
}
