import { execFile } from 'node:child_process';
import { readFile, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { promisify } from 'node:util';
import { UnaryClient } from '../grpc/client.js';
import { loopsOf } from '../mount/loop-devices.js';
import { readMountTable } from '../mount/mountinfo.js';
import { isSameProcessAlive, type Termination, terminateProcess } from '../mount/processes.js';
import { unmountAll } from '../mount/unmount.js';
import { type CsiNodeVolume, dropCsiNodeEntry, readCsiNodeState } from './csi-node-state.js';

const run = promisify(execFile);

/** `path` strictly below `root` (both made absolute and normalised first: no `..` escapes). */
export function isBelow(path: string, root: string): boolean {
  const p = resolve(path);
  const r = resolve(root);
  return p !== r && p.startsWith(r === '/' ? '/' : `${r}/`);
}

export interface CleanupResult {
  done: string[];
  /** What was not touched, and why; the state entry is kept while anything is left. */
  left: string[];
}

/** How long csi-node may take to unpublish or unstage one path (an unmount flushes the page cache). */
const CSI_NODE_CALL_MS = 120_000;

/**
 * Undo what a running csi-node staged for one volume through the csi-node itself (its CSI socket):
 * NodeUnpublishVolume of each target, then NodeUnstageVolume. Done behind its back, the entry it
 * still holds in memory would come back into the file at its next change.
 */
export async function unstageThroughCsiNode(entry: CsiNodeVolume, endpoint: string): Promise<CleanupResult> {
  const out: CleanupResult = { done: [], left: [] };
  // Its proxy first, as below: the volume is gone, and while the proxy waits for a target that will
  // not come back, each write of the unmount (ext4 writes its superblock) waits out the path timeout.
  if (entry.proxy) await stopProcess(entry.proxy.pid, entry.proxy.pidStartTime, 'proxy', out);
  const node = new UnaryClient('csi.proto', 'csi.v1.Node', endpoint, CSI_NODE_CALL_MS);
  const step = async (what: string, method: string, req: Record<string, unknown>) => {
    try {
      await node.call(method, { volume_id: entry.volumeId, ...req });
      out.done.push(`${what} through csi-node`);
    } catch (err) {
      out.left.push(`${what}: csi-node answered ${(err as Error).message}`);
    }
  };
  try {
    for (const target of Object.keys(entry.publishes ?? {}))
      await step(`unpublished ${target}`, 'NodeUnpublishVolume', { target_path: target });
    if (entry.stagingPath && !out.left.some((l) => !l.startsWith('proxy')))
      await step(`unstaged ${entry.stagingPath}`, 'NodeUnstageVolume', {
        staging_target_path: entry.stagingPath,
      });
  } finally {
    node.close();
  }
  return out;
}

/**
 * Undo what csi-node left for one volume, touching only what lies where csi-node works: publish
 * targets and the staging path only below `roots` (the kubelet directory by default), the volume's
 * directory and FUSE mount only below the state directory, processes only when the pid still is the
 * process csi-node recorded (same start time). The state entry goes last, when nothing is left.
 */
export async function cleanCsiNodeEntry(
  entry: CsiNodeVolume,
  stateDir: string,
  roots: string[],
): Promise<CleanupResult> {
  const out: CleanupResult = { done: [], left: [] };
  const current = (await readCsiNodeState(stateDir))?.volumes.find((v) => v.volumeId === entry.volumeId);
  if (!current || current.stagedAt !== entry.stagedAt) {
    out.left.push('the csi-node state entry changed since it was read (staged again?): left alone');
    return out;
  }
  const belowRoots = (p: string) => roots.some((r) => isBelow(p, r));
  const removePath = async (path: string, what: string) => {
    if (!belowRoots(path)) {
      out.left.push(`${what} ${path}: not below the csi-node roots (${roots.join(', ')})`);
      return;
    }
    try {
      const { count } = await unmountAll(path);
      if (count) out.done.push(`unmounted ${path}`);
      const st = await stat(path).catch(() => null);
      if (!st) return;
      if (st.isDirectory()) await rmdir(path);
      else await unlink(path);
      out.done.push(`removed ${what} ${path}`);
    } catch (err) {
      out.left.push(`${what} ${path}: ${(err as Error).message}`);
    }
  };
  // The proxy first: its volume is gone, unpublished or served elsewhere, so nothing can be flushed
  // to it any more, and while it waits for a target that will not come back every unmount below
  // would wait on writeback until the path timeout. Without it, I/O fails at once and they finish.
  if (current.proxy) await stopProcess(current.proxy.pid, current.proxy.pidStartTime, 'proxy', out);
  for (const target of Object.keys(current.publishes ?? {})) await removePath(target, 'publish target');
  if (current.stagingPath) await removePath(current.stagingPath, 'staging path');

  const d = current.device;
  if (d) await detachDevice(d, stateDir, out);

  if (current.dir) {
    if (!isBelow(current.dir, stateDir)) out.left.push(`directory ${current.dir}: not below ${stateDir}`);
    else {
      const mounted = (await readMountTable()).filter(
        (m) => isBelow(m.mountPoint, current.dir!) || resolve(m.mountPoint) === resolve(current.dir!),
      );
      if (mounted.length)
        out.left.push(`directory ${current.dir}: ${mounted.length} mount(s) still below it`);
      else if (await stat(current.dir).catch(() => null)) {
        await rm(current.dir, { recursive: true, force: true });
        out.done.push(`removed directory ${current.dir}`);
      }
    }
  }
  if (out.left.length) return out;
  if (await dropCsiNodeEntry(stateDir, current)) out.done.push('dropped the csi-node state entry');
  else out.left.push('the csi-node state entry changed meanwhile: kept');
  return out;
}

async function detachDevice(
  d: NonNullable<CsiNodeVolume['device']>,
  stateDir: string,
  out: CleanupResult,
): Promise<void> {
  try {
    if (d.kind === 'kernel-nbd' && /^\/dev\/nbd\d+$/.test(d.device)) {
      const pid = await readFile(`/sys/block/${basename(d.device)}/pid`, 'utf8').catch(() => '');
      if (pid.trim()) {
        await run('nbd-client', ['-d', d.device], { timeout: 10_000 });
        out.done.push(`disconnected ${d.device}`);
      }
    } else if ((d.kind === 'fuse-loop' || d.kind === 'nbdfuse-loop') && d.file) {
      if (!isBelow(d.file, stateDir)) {
        out.left.push(`loop devices of ${d.file}: not below ${stateDir}`);
        return;
      }
      // Only loop devices still bound to the file csi-node bound: the recorded number may be reused.
      for (const loop of await loopsOf(d.file)) {
        await run('losetup', ['-d', loop], { timeout: 10_000 });
        out.done.push(`detached ${loop}`);
      }
    }
  } catch (err) {
    out.left.push(`device ${d.device}: ${(err as Error).message}`);
    return;
  }
  // fuse-loop: the file itself is the FUSE mount point; nbdfuse-loop: the directory holding it.
  const fuseMount = d.kind === 'fuse-loop' ? d.file : d.fuseDir;
  if (fuseMount) {
    if (!isBelow(fuseMount, stateDir)) out.left.push(`FUSE mount ${fuseMount}: not below ${stateDir}`);
    else {
      try {
        const { count } = await unmountAll(fuseMount);
        if (count) out.done.push(`unmounted ${fuseMount}`);
      } catch (err) {
        out.left.push(`FUSE mount ${fuseMount}: ${(err as Error).message}`);
      }
    }
  }
  if (d.fusePid) await stopProcess(d.fusePid, d.fusePidStartTime, 'nbdfuse', out);
}

/**
 * End a recorded process if the pid is still that process: SIGTERM, then SIGKILL after 5 s. Its
 * volume is gone, so nothing it would still flush matters (a proxy with requests for a deleted
 * target in flight waits out their timeout on SIGTERM).
 */
async function stopProcess(pid: number, startTime: string | undefined, what: string, out: CleanupResult) {
  if (!startTime) {
    if (await isSameProcessAlive(pid))
      out.left.push(`${what} pid ${pid}: no start time recorded, so not surely csi-node's: not stopped`);
    return;
  }
  let ended: Termination;
  try {
    ended = await terminateProcess(pid, startTime);
  } catch (err) {
    out.left.push(`${what} pid ${pid}: ${(err as Error).message}`);
    return;
  }
  if (ended === 'terminated') out.done.push(`stopped ${what} pid ${pid}`);
  else if (ended === 'killed') out.done.push(`killed ${what} pid ${pid} (it did not stop on SIGTERM)`);
  else if (ended === 'alive') out.left.push(`${what} pid ${pid} did not stop on SIGTERM nor SIGKILL`);
}
