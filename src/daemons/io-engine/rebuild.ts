import type { Logger } from '../../lib/logger.js';
import { rebuildBytes, rebuilds, rebuildsActive } from '../../lib/metrics/catalog.js';
import type { Nexus } from './nexus.js';
import type { NexusChild } from './nexus-child.js';

/** Bytes copied per step; writes to the step being copied wait for it. */
export const REBUILD_SEGMENT = 4 * 1024 * 1024;

/**
 * Full rebuild of a child: copy the whole range from the healthy children while writes continue.
 * Writes below the cursor are mirrored to the child by the nexus, so once the cursor reaches the
 * end the child holds the same bytes and joins as healthy.
 */
export async function rebuildChild(nexus: Nexus, child: NexusChild, log: Logger): Promise<void> {
  rebuildsActive.inc();
  let result: 'completed' | 'stopped' | 'failed' = 'failed';
  try {
    result = await copyChild(nexus, child, log);
  } finally {
    rebuildsActive.dec();
    rebuilds.inc({ result });
  }
}

async function copyChild(
  nexus: Nexus,
  child: NexusChild,
  log: Logger,
): Promise<'completed' | 'stopped' | 'failed'> {
  const started = Date.now();
  child.rebuildStartedAt = started;
  const buf = Buffer.allocUnsafe(Math.min(REBUILD_SEGMENT, nexus.size));
  log.info({ nexus: nexus.uuid, child: child.uri }, 'rebuild started');
  for (let pos = 0; pos < nexus.size; pos += REBUILD_SEGMENT) {
    if (child.state !== 'Degraded' || nexus.isShutdown) {
      log.warn({ nexus: nexus.uuid, child: child.uri, at: pos }, 'rebuild stopped');
      return 'stopped';
    }
    const end = Math.min(nexus.size, pos + REBUILD_SEGMENT);
    const b = buf.subarray(0, end - pos);
    const release = await nexus.lockRange(pos, end);
    try {
      try {
        await nexus.read(b, pos);
      } catch (err) {
        child.state = 'Faulted';
        child.reason = `rebuild source failed: ${(err as Error).message}`;
        await nexus.persist();
        return 'failed';
      }
      try {
        await child.backend.write(b, pos, false);
      } catch (err) {
        await nexus.childFailed(child, err);
        return 'failed';
      }
      rebuildBytes.inc(b.length);
      child.rebuildCursor = end;
    } finally {
      release();
    }
  }
  try {
    await child.backend.flush();
  } catch (err) {
    await nexus.childFailed(child, err);
    return 'failed';
  }
  if (child.state !== 'Degraded' || nexus.isShutdown) return 'stopped';
  child.state = 'Online';
  child.reason = '';
  await nexus.persist();
  log.info({ nexus: nexus.uuid, child: child.uri, ms: Date.now() - started }, 'rebuild complete');
  return 'completed';
}
