import type { Logger } from '../../lib/logger.js';
import { invalid, precondition } from './errors.js';
import type { Nexus } from './nexus.js';
import type { ChildConnection, NexusChild } from './nexus-child.js';

/**
 * Grow a nexus online. Every child in I/O must already hold `size` bytes (core resizes the replicas
 * first). All I/O is held while remote children reconnect to the same URI (an NBD client learns the
 * export size only at connect) and the fresh connections are swapped in; then the size grows and I/O
 * resumes. Any failure before the swap changes nothing. NexusInfo is unaffected: child health does
 * not change. NBD clients already connected to the nexus keep the size they negotiated until they
 * reconnect (NBD has no resize notification); new connections see the new size.
 */
export async function resizeNexus(nexus: Nexus, size: number, log: Logger): Promise<void> {
  if (nexus.isShutdown) throw precondition(`nexus '${nexus.uuid}' is shut down`);
  if (size < nexus.size)
    throw invalid(`nexus '${nexus.uuid}' cannot shrink from ${nexus.size} to ${size} bytes`);
  if (size === nexus.size) return;
  // A rebuild copies up to the nexus size through the child connections: resize after it.
  if (nexus.rebuilding)
    throw precondition(
      `a child of nexus '${nexus.uuid}' is being rebuilt; resize once the rebuild completes`,
    );
  const release = await nexus.holdIo();
  const fresh: { child: NexusChild; conn: ChildConnection }[] = [];
  try {
    if (nexus.isShutdown) throw precondition(`nexus '${nexus.uuid}' is shut down`);
    try {
      for (const child of nexus.children) {
        if (child.state === 'Faulted') continue;
        let have = child.backend.size;
        if (child.reopen) {
          const conn = await child.reopen().catch((err: Error) => {
            throw precondition(
              `cannot reconnect child '${child.uri}' of nexus '${nexus.uuid}' to learn its size: ${err.message}`,
            );
          });
          fresh.push({ child, conn });
          have = conn.backend.size;
        }
        if (have < size)
          throw precondition(
            `child '${child.uri}' of nexus '${nexus.uuid}' has ${have} bytes, less than ${size}; resize the replica first`,
          );
      }
    } catch (err) {
      for (const f of fresh) await f.conn.detach().catch(() => {});
      throw err;
    }
    for (const { child, conn } of fresh) {
      const old = child.swap(conn);
      // Nothing is in flight on the old connection (I/O is held): it closes cleanly.
      await old.detach().catch(() => {});
    }
    const from = nexus.size;
    nexus.size = size;
    nexus.grewTo(size);
    log.info({ nexus: nexus.uuid, from, to: size, reconnected: fresh.length }, 'nexus resized');
  } finally {
    release();
  }
}
