import { probePath } from '../../lib/mount/health.js';
import { mountsAt, readMountTable } from '../../lib/mount/mountinfo.js';
import { isMountPoint } from '../../lib/mount/unmount.js';
import { attacherFor } from './attacher.js';
import { proxyStatus } from './proxy.js';
import { type StagedVolume, stagedReadOnly } from './state.js';

/** A write the target refused for want of space this recently still makes the volume abnormal. */
const NO_SPACE_RECENT_MS = 5 * 60_000;

export interface VolumeHealth {
  abnormal: boolean;
  message: string;
  /** Only the path to the target is down: the proxy reconnects (or waits to be re-pointed). */
  pathDown?: boolean;
}

/** A volume whose path proxy died: its device's file went with it, so no new target can help. */
export const proxyGone = (pid: number) =>
  `the path proxy (pid ${pid}) is gone: every I/O on the volume fails on this node until it is staged again (a repeated NodeStageVolume repairs it: restart the pods using it)`;

/** What is wrong with a staged volume's path (proxy, device, mount), if anything. */
export async function volumeHealth(v: StagedVolume): Promise<VolumeHealth> {
  if (!v.proxy) return { abnormal: true, message: 'staging did not finish: no path proxy' };
  const st = await proxyStatus(v.proxy);
  if (!st) return { abnormal: true, message: proxyGone(v.proxy.pid) };
  if (!v.device) return { abnormal: true, message: 'staging did not finish: no block device' };
  const problem = await attacherFor(v.device).problem(v.device, st);
  if (problem) return { abnormal: true, message: problem };
  if (!v.block) {
    if (!(await isMountPoint(v.stagingPath)))
      return { abnormal: true, message: `nothing is mounted at ${v.stagingPath}` };
    const p = await probePath(v.stagingPath);
    if (p.state !== 'ok')
      return {
        abnormal: true,
        message: `${v.stagingPath} does not answer (${'code' in p ? p.code : p.state})`,
      };
    const readOnly = await wentReadOnly(v);
    if (readOnly) return { abnormal: true, message: readOnly };
  }
  if (!st.connected)
    return {
      abnormal: true,
      message: `no path to ${st.target}: ${st.lastError ?? 'disconnected'} (reconnecting)`,
      pathDown: true,
    };
  if (st.noSpaceAt !== undefined && Date.now() - st.noSpaceAt < NO_SPACE_RECENT_MS)
    return {
      abnormal: true,
      message: `writes failed for want of space at ${new Date(st.noSpaceAt).toISOString()}: a pool holding the volume's replicas is full (see storctl get pools and storctl describe volume)`,
    };
  return { abnormal: false, message: `served through ${st.target}` };
}

/**
 * Why a filesystem staged read-write is read-only now, or null: ext4 turns itself read-only after
 * I/O errors (its path was down longer than the path timeout), and stays so while mounted. Reads
 * still work, so nothing else here notices; every write fails.
 */
async function wentReadOnly(v: StagedVolume): Promise<string | null> {
  if (stagedReadOnly(v)) return null;
  const mount = mountsAt(await readMountTable(), v.stagingPath).at(-1);
  if (!mount) return null;
  const options = new Set([...mount.mountOptions, ...mount.superOptions]);
  if (!options.has('ro') && !options.has('emergency_ro')) return null;
  return `the ${mount.fsType} filesystem at ${v.stagingPath} went read-only${options.has('emergency_ro') ? ' after I/O errors (emergency_ro)' : ''}: writes fail; unpublish and unstage the volume, then stage it again to repair it`;
}
