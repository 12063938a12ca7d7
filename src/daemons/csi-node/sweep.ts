import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { procStat, terminateProcess } from '../../lib/mount/processes.js';
import { FuseLoopAttacher, fuseFileOf } from './attacher-fuse.js';
import { NbdfuseLoopAttacher } from './attacher-nbdfuse.js';

/** PIDs (with start times) of processes whose arguments name something inside `dir`. */
async function processesIn(dir: string): Promise<{ pid: number; startTime: string }[]> {
  const out: { pid: number; startTime: string }[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmd = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (!cmd.includes(`${dir}/`)) continue;
    const st = await procStat(Number(name));
    if (st) out.push({ pid: Number(name), startTime: st.startTime });
  }
  return out;
}

/**
 * The last step of undoing a volume: whatever a crash between two recorded steps left in its
 * directory that the state file does not know about — a loop device on its FUSE file, the FUSE
 * mount (of either FUSE attacher), a proxy or nbdfuse process (found by their arguments, stopped
 * by PID).
 */
export async function sweepVolumeDir(dir: string): Promise<string[]> {
  const swept: string[] = [];
  await new FuseLoopAttacher().detach({ kind: 'fuse-loop', device: '', file: fuseFileOf(dir) });
  const fuseDir = join(dir, 'fuse');
  await new NbdfuseLoopAttacher().detach({
    kind: 'nbdfuse-loop',
    device: '',
    fuseDir,
    file: join(fuseDir, basename(dir)),
  });
  for (const p of await processesIn(dir)) {
    await terminateProcess(p.pid, p.startTime);
    swept.push(`process ${p.pid}`);
  }
  return swept;
}
