import { execFile } from 'node:child_process';
import { type CsiNodeVolume, readCsiNodeState } from '../orphans/csi-node-state.js';

/** The volumes csi-node has staged (its state file under `stateDir`); none when it cannot be read. */
export async function stagedVolumes(stateDir: string): Promise<CsiNodeVolume[]> {
  const state = await readCsiNodeState(stateDir).catch(() => null);
  return state?.volumes.filter((v) => v.stagingPath) ?? [];
}

/**
 * Write back what staged volumes hold in the page cache while the io-engines behind them still run:
 * once they stop, the writeback has no target, the filesystem fails it (ext4 then goes read-only)
 * and those writes are lost. A filesystem is synced whole (`sync -f`), a raw block volume through
 * its device. Each flush gets `timeoutMs`; one that does not finish (its path already down) is left
 * running and returned, so stopping never hangs on it.
 */
export async function flushStaged(volumes: CsiNodeVolume[], timeoutMs: number): Promise<CsiNodeVolume[]> {
  const stuck = await Promise.all(
    volumes.map(async (v) => {
      const argv = v.block && v.device?.device ? [v.device.device] : ['-f', v.stagingPath!];
      const done = new Promise<boolean>((resolve) => {
        const child = execFile('sync', argv, (err) => resolve(!err));
        child.unref();
      });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const ok = await Promise.race([done, late]);
      clearTimeout(timer);
      return ok ? null : v;
    }),
  );
  return stuck.filter((v): v is CsiNodeVolume => v !== null);
}
