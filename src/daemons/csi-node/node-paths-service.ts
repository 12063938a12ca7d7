import { status } from '@grpc/grpc-js';
import { requireString } from '../../lib/csi/validate.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import { parseNbdUri } from '../../lib/nbd/client.js';
import type { BlockVolumes } from './volumes.js';

/** How long ReplacePath waits for a read through the new target. */
const VERIFY_MS = 5000;
const MAX_PROBE_MS = 60_000;

/**
 * NodePaths (proto/csi-node-paths.proto): the HA node agent lists the staged volumes' paths, each
 * probed, and re-points one to the target a switchover built.
 */
export function nodePathsService(volumes: BlockVolumes) {
  return {
    ListPaths: unary(async (req: { probe_timeout_ms?: number }) => {
      const probeMs = Math.min(Number(req.probe_timeout_ms) || 0, MAX_PROBE_MS);
      return { paths: await volumes.paths(probeMs) };
    }),
    ReplacePath: unary(async (req: { volume_id?: string; target_uri?: string }) => {
      const volumeId = requireString(req.volume_id, 'volume_id');
      const target = requireString(req.target_uri, 'target_uri');
      try {
        parseNbdUri(target);
      } catch (err) {
        throw new GrpcError(status.INVALID_ARGUMENT, `target_uri: ${(err as Error).message}`);
      }
      // Not behind the volume's other operations: an unstage whose flush waits on the dead path
      // would hold it until the path timeout, and refuse the re-point that lets it finish.
      await volumes.replacePath(volumeId, target, VERIFY_MS);
      return {};
    }),
  };
}
