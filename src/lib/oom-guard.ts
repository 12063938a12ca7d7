import { writeFile } from 'node:fs/promises';

/**
 * Exempt a process of the data path (a volume's path proxy, its nbdfuse) from the kernel's OOM
 * killer, as open-iscsi's iscsid unit does (OOMScoreAdjust=-1000): killed, it takes the volume's
 * filesystem with it (every I/O fails until the volume is staged again), which no memory it frees
 * is worth. Needs root (CAP_SYS_RESOURCE); returns why it could not, or null.
 */
export async function exemptFromOomKiller(pid: number | 'self'): Promise<string | null> {
  try {
    await writeFile(`/proc/${pid}/oom_score_adj`, '-1000');
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
