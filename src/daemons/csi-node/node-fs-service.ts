import { requireString } from '../../lib/csi/validate.js';
import { unary } from '../../lib/grpc/status.js';
import { DEFAULT_FREEZE_TIMEOUT_MS } from './freeze.js';
import type { BlockVolumes } from './volumes.js';

/** Longest freeze a caller may ask for: applications stall while a filesystem is frozen. */
export const MAX_FREEZE_TIMEOUT_MS = 10 * 60_000;

/**
 * NodeFs (proto/csi-node-fs.proto): the controller freezes a staged filesystem before a snapshot
 * and thaws it afterwards; a freeze nobody undoes within its timeout is undone here.
 */
export function nodeFsService(volumes: BlockVolumes) {
  return {
    Freeze: unary(async (req: { volume_id?: string; timeout_ms?: number }) => {
      const volumeId = requireString(req.volume_id, 'volume_id');
      const timeoutMs = Math.min(Number(req.timeout_ms) || DEFAULT_FREEZE_TIMEOUT_MS, MAX_FREEZE_TIMEOUT_MS);
      await volumes.exclusive(volumeId, () => volumes.freezer.freeze(volumeId, timeoutMs));
      return {};
    }),
    Unfreeze: unary(async (req: { volume_id?: string }) => {
      const volumeId = requireString(req.volume_id, 'volume_id');
      const wasFrozen = await volumes.exclusive(volumeId, () => volumes.freezer.unfreeze(volumeId));
      return { was_frozen: wasFrozen };
    }),
  };
}
