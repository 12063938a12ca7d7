import type { Logger } from '../../lib/logger.js';
import { rebuildBytes, rebuilds, rebuildsActive } from '../../lib/metrics/catalog.js';
import { ioBuffer } from '../../lib/nbd/io-buffer.js';
import { zeroRuns } from '../../lib/nbd/zero-runs.js';
import type { Nexus } from './nexus.js';
import type { NexusChild } from './nexus-child.js';
import { MAP_SEGMENT } from './rebuild-map.js';
import { UnflushedWrites } from './unflushed-writes.js';

/** Bytes copied per step; writes to the step being copied wait for it. */
export const REBUILD_SEGMENT = 4 * 1024 * 1024;

/** Finished rebuilds kept per nexus (the oldest go first). */
const MAX_HISTORY = 64;

/** One finished rebuild, as Mayastor's io-engine records it (RebuildHistoryRecord), in bytes. */
export interface RebuildRecord {
  childUri: string;
  srcUri: string;
  state: 'Completed' | 'Failed' | 'Stopped';
  /** From the rebuild map (only the regions written while the child was away), else in full. */
  partial: boolean;
  /** Bytes of the child the rebuild covers (the nexus size). */
  totalBytes: number;
  /** Bytes known to hold the source's content (copied, or clean in the rebuild map). */
  recoveredBytes: number;
  /** Bytes of data written to the child (stretches of zeroes are zeroed, not sent). */
  transferredBytes: number;
  startTime: Date;
  endTime: Date;
}

type Result = 'completed' | 'stopped' | 'failed';

/**
 * Rebuild a child while writes continue. With a rebuild map (the child was faulted and came back)
 * only its dirty segments are copied and the child takes every write meanwhile (partial rebuild);
 * without one the whole range is copied, and writes below the cursor are mirrored to the child
 * (full rebuild). Either way, once done the child holds the same bytes and joins as healthy.
 */
export async function rebuildChild(nexus: Nexus, child: NexusChild, log: Logger): Promise<void> {
  rebuildsActive.inc();
  let result: Result = 'failed';
  const startTime = new Date();
  child.rebuildStartedAt = startTime.getTime();
  child.rebuildEndedAt = null;
  const partial = child.rebuildPartial && child.rebuildMap !== null;
  child.rebuildPartial = partial;
  child.rebuildCopied = 0;
  child.rebuildTransferred = 0;
  child.rebuildCursor = 0;
  child.rebuildTotal = partial ? child.rebuildMap!.dirtyBytes : nexus.size;
  child.unflushedCopies = new UnflushedWrites(nexus.size);
  const srcUri = nexus.children.find((c) => c.state === 'Online')?.uri ?? '';
  let recorded = false;
  /** The history record, kept the moment the result is known: a completed child is Online only with it. */
  const record = (outcome: Result) => {
    if (recorded) return;
    recorded = true;
    const endTime = new Date();
    child.rebuildEndedAt = endTime.getTime();
    const total = nexus.size;
    const remaining = partial
      ? (child.rebuildMap?.dirtyBytes ?? 0)
      : Math.max(0, total - child.rebuildCursor);
    nexus.rebuildHistory.push({
      childUri: child.uri,
      srcUri,
      state: outcome === 'completed' ? 'Completed' : outcome === 'stopped' ? 'Stopped' : 'Failed',
      partial,
      totalBytes: total,
      recoveredBytes: outcome === 'completed' ? total : total - remaining,
      transferredBytes: child.rebuildTransferred,
      startTime,
      endTime,
    });
    if (nexus.rebuildHistory.length > MAX_HISTORY)
      nexus.rebuildHistory.splice(0, nexus.rebuildHistory.length - MAX_HISTORY);
  };
  try {
    result = partial
      ? await copyDirty(nexus, child, log, () => record('completed'))
      : await copyAll(nexus, child, log, () => record('completed'));
  } finally {
    rebuildsActive.dec();
    rebuilds.inc({ result });
    record(result);
  }
}

const stopped = (nexus: Nexus, child: NexusChild) => child.state !== 'Degraded' || nexus.isShutdown;

/**
 * Copy [pos, end) from the healthy children to the child with writes to the range held; `done`
 * runs before they resume. Faults the child when either side fails.
 */
async function copyStep(
  nexus: Nexus,
  child: NexusChild,
  buf: Buffer,
  pos: number,
  end: number,
  done: () => void,
): Promise<boolean> {
  const b = buf.subarray(0, end - pos);
  const release = await nexus.lockRange(pos, end);
  try {
    try {
      await nexus.read(b, pos);
    } catch (err) {
      if (child.state !== 'Faulted') {
        nexus.markFaulted(child, `rebuild source failed: ${(err as Error).message}`);
        await nexus.persistHealth();
      }
      return false;
    }
    // Data is written; stretches of zeroes are zeroed, which a replica does without allocating
    // where it already reads zero: a thin child keeps its holes (a full copy would fill them).
    let written = 0;
    try {
      await Promise.all(
        zeroRuns(b).map((run) => {
          if (run.zero) return child.backend.writeZeroes(pos + run.start, run.end - run.start, false);
          written += run.end - run.start;
          return child.backend.write(b.subarray(run.start, run.end), pos + run.start, false);
        }),
      );
    } catch (err) {
      await nexus.childFailed(child, err);
      return false;
    }
    child.unflushedCopies?.mark(pos, b.length);
    rebuildBytes.inc(written);
    child.rebuildCopied += b.length;
    child.rebuildTransferred += written;
    done();
    return true;
  } finally {
    release();
  }
}

/** Flush the child and make it Online, unless it was stopped meanwhile. */
async function complete(
  nexus: Nexus,
  child: NexusChild,
  log: Logger,
  ready: () => boolean,
  online: () => void,
): Promise<Result | null> {
  try {
    await child.backend.flush();
  } catch (err) {
    await nexus.childFailed(child, err);
    return 'failed';
  }
  if (stopped(nexus, child)) return 'stopped';
  // The copies so far are on the child's disk now.
  child.unflushedCopies = new UnflushedWrites(nexus.size);
  // a write logged during the flush (one that started before the child came back): copy it too
  if (!ready()) return null;
  child.state = 'Online';
  child.reason = '';
  child.rebuildMap = null;
  child.unflushedCopies = null;
  online();
  await nexus.persist();
  log.info(
    {
      nexus: nexus.uuid,
      child: child.uri,
      ms: Date.now() - child.rebuildStartedAt!,
      partial: child.rebuildPartial,
      bytes: child.rebuildCopied,
    },
    'rebuild complete',
  );
  return 'completed';
}

async function copyAll(nexus: Nexus, child: NexusChild, log: Logger, online: () => void): Promise<Result> {
  const buf = ioBuffer(Math.min(REBUILD_SEGMENT, nexus.size));
  log.info({ nexus: nexus.uuid, child: child.uri, partial: false }, 'rebuild started');
  for (let pos = 0; pos < nexus.size; pos += REBUILD_SEGMENT) {
    if (stopped(nexus, child)) {
      log.warn({ nexus: nexus.uuid, child: child.uri, at: pos }, 'rebuild stopped');
      return 'stopped';
    }
    const end = Math.min(nexus.size, pos + REBUILD_SEGMENT);
    const ok = await copyStep(nexus, child, buf, pos, end, () => {
      child.rebuildCursor = end;
    });
    if (!ok) return 'failed';
  }
  return (await complete(nexus, child, log, () => true, online)) ?? 'failed';
}

async function copyDirty(nexus: Nexus, child: NexusChild, log: Logger, online: () => void): Promise<Result> {
  const map = child.rebuildMap!;
  const buf = ioBuffer(Math.min(REBUILD_SEGMENT, nexus.size));
  const maxSegments = REBUILD_SEGMENT / MAP_SEGMENT;
  log.info(
    { nexus: nexus.uuid, child: child.uri, partial: true, dirtyBytes: map.dirtyBytes },
    'rebuild started',
  );
  for (;;) {
    let seg = 0;
    for (;;) {
      if (stopped(nexus, child)) {
        log.warn({ nexus: nexus.uuid, child: child.uri, at: seg * MAP_SEGMENT }, 'rebuild stopped');
        return 'stopped';
      }
      const run = map.nextRun(seg, maxSegments);
      if (!run) break;
      const [s, e] = run;
      const pos = s * MAP_SEGMENT;
      const end = Math.min(nexus.size, e * MAP_SEGMENT);
      // Writes logged into [s, e) after the look-up finished before the lock was granted, so the
      // copy below holds them; clearing after the copy loses nothing.
      const ok = await copyStep(nexus, child, buf, pos, end, () => map.clear(s, e));
      if (!ok) return 'failed';
      child.rebuildTotal = Math.max(child.rebuildTotal, child.rebuildCopied + map.dirtyBytes);
      seg = e;
    }
    const done = await complete(nexus, child, log, () => map.count === 0, online);
    if (done) return done;
  }
}
