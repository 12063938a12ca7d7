import { status } from '@grpc/grpc-js';
import { TOPOLOGY_NODE_KEY, TOPOLOGY_SELECTOR_KEY, TOPOLOGY_SELECTOR_VALUE } from '../../lib/csi/plugin.js';
import type { VolumeCapability } from '../../lib/csi/types.js';
import { invalid, requireString, validateMapSize } from '../../lib/csi/validate.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import type { Logger } from '../../lib/logger.js';
import { confinePath } from '../../lib/mount/confine.js';
import { parseNbdUri } from '../../lib/nbd/client.js';
import { FS_TYPES, type FsType } from './fs-ops.js';
import { mountFlagProblem } from './mount-flags.js';
import type { BlockVolumes } from './volumes.js';

/** Access modes a block volume can honour on one node (a filesystem is never shared between nodes). */
export const BLOCK_ACCESS_MODES = [
  'SINGLE_NODE_WRITER',
  'SINGLE_NODE_READER_ONLY',
  'SINGLE_NODE_SINGLE_WRITER',
  'SINGLE_NODE_MULTI_WRITER',
  'MULTI_NODE_READER_ONLY',
] as const;

/** The publish_context key of the target URI (as Mayastor's controller sets it). */
export const URI_CONTEXT_KEY = 'uri';

export interface NodeServiceDeps {
  nodeId: string;
  maxVolumes: number;
  defaultFsType: FsType;
  roots: string[];
  volumes: BlockVolumes;
  log: Logger;
}

interface Cap {
  block: boolean;
  fsType: FsType;
  mountFlags: string[];
  accessMode: string;
}

function capability(cap: VolumeCapability | null | undefined, defaultFsType: FsType): Cap {
  if (!cap) throw invalid('volume_capability is required');
  const block = !!cap.block || cap.access_type === 'block';
  if (!block && !cap.mount) throw invalid('volume_capability needs one of block or mount');
  const mode = cap.access_mode?.mode;
  if (!mode || mode === 'UNKNOWN') throw invalid('volume_capability.access_mode is required');
  if (!(BLOCK_ACCESS_MODES as readonly string[]).includes(mode))
    throw invalid(`access mode ${mode} is not supported (supported: ${BLOCK_ACCESS_MODES.join(', ')})`);
  const fs = cap.mount?.fs_type || defaultFsType;
  if (!block && !(FS_TYPES as readonly string[]).includes(fs))
    throw invalid(`fs_type '${fs.slice(0, 32)}' is not supported (supported: ${FS_TYPES.join(', ')})`);
  const flags = block ? [] : (cap.mount?.mount_flags ?? []);
  if (flags.reduce((n, f) => n + Buffer.byteLength(f), 0) > 4096)
    throw invalid('volume_capability.mount.mount_flags exceeds 4 KiB');
  for (const f of flags) {
    if (!/^[A-Za-z0-9_.=:-]{1,128}$/.test(f))
      throw invalid(`mount flag '${f.slice(0, 32)}' is not a plain mount option`);
    const problem = mountFlagProblem(fs as FsType, f);
    if (problem) throw invalid(problem);
  }
  return { block, fsType: fs as FsType, mountFlags: flags, accessMode: mode };
}

function targetUri(ctx: Record<string, string> | undefined): string {
  const uri = ctx?.[URI_CONTEXT_KEY];
  if (!uri) throw invalid(`publish_context.${URI_CONTEXT_KEY} (the volume's nbd:// target) is required`);
  if (uri.length > 1024) throw invalid(`publish_context.${URI_CONTEXT_KEY} is longer than 1024 bytes`);
  try {
    const t = parseNbdUri(uri);
    if (!t.exportName) throw new Error('no export name');
  } catch (err) {
    throw invalid(`publish_context.${URI_CONTEXT_KEY} '${uri.slice(0, 128)}': ${(err as Error).message}`);
  }
  return uri;
}

interface StageReq {
  volume_id?: string;
  publish_context?: Record<string, string>;
  staging_target_path?: string;
  volume_capability?: VolumeCapability | null;
  volume_context?: Record<string, string>;
}

interface PublishReq extends StageReq {
  target_path?: string;
  readonly?: boolean;
}

/** The CSI Node service of the block driver. */
export function nodeService(deps: NodeServiceDeps) {
  const { volumes, log, roots } = deps;
  const logged =
    <Req extends { volume_id?: string }, Res>(rpc: string, fn: (req: Req) => Promise<Res>) =>
    async (req: Req): Promise<Res> => {
      try {
        return await fn(req);
      } catch (err) {
        const code = err instanceof GrpcError ? err.code : status.INTERNAL;
        log.warn({ rpc, volumeId: req.volume_id, code, err: (err as Error).message }, `${rpc} failed`);
        throw err instanceof GrpcError ? err : new GrpcError(status.INTERNAL, (err as Error).message);
      }
    };

  return {
    NodeGetInfo: unary(async () => ({
      node_id: deps.nodeId,
      max_volumes_per_node: String(deps.maxVolumes),
      accessible_topology: {
        segments: { [TOPOLOGY_NODE_KEY]: deps.nodeId, [TOPOLOGY_SELECTOR_KEY]: TOPOLOGY_SELECTOR_VALUE },
      },
    })),
    NodeGetCapabilities: unary(async () => ({
      capabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME', 'VOLUME_CONDITION'].map(
        (type) => ({ rpc: { type } }),
      ),
    })),
    NodeStageVolume: unary(
      logged('NodeStageVolume', async (req: StageReq) => {
        const volumeId = requireString(req.volume_id, 'volume_id');
        const stagingPath = await confinePath(req.staging_target_path, 'staging_target_path', roots);
        const cap = capability(req.volume_capability, deps.defaultFsType);
        validateMapSize(req.publish_context, 'publish_context');
        validateMapSize(req.volume_context, 'volume_context');
        const target = targetUri(req.publish_context);
        await volumes.exclusive(volumeId, () => volumes.stage({ volumeId, stagingPath, target, ...cap }));
        return {};
      }),
    ),
    NodeUnstageVolume: unary(
      logged('NodeUnstageVolume', async (req: StageReq) => {
        const volumeId = requireString(req.volume_id, 'volume_id');
        const stagingPath = await confinePath(req.staging_target_path, 'staging_target_path', roots);
        await volumes.exclusive(volumeId, () => volumes.unstage(volumeId, stagingPath));
        return {};
      }),
    ),
    NodePublishVolume: unary(
      logged('NodePublishVolume', async (req: PublishReq) => {
        const volumeId = requireString(req.volume_id, 'volume_id');
        const targetPath = await confinePath(req.target_path, 'target_path', roots);
        const cap = capability(req.volume_capability, deps.defaultFsType);
        if (!req.staging_target_path)
          throw new GrpcError(
            status.FAILED_PRECONDITION,
            'staging_target_path is required: this plugin stages volumes (STAGE_UNSTAGE_VOLUME)',
          );
        const stagingPath = await confinePath(req.staging_target_path, 'staging_target_path', roots);
        if (targetPath === stagingPath) throw invalid('target_path must differ from staging_target_path');
        const readonly = !!req.readonly || cap.accessMode.endsWith('READER_ONLY');
        await volumes.exclusive(volumeId, () =>
          volumes.publish({ volumeId, stagingPath, targetPath, block: cap.block, readonly }),
        );
        return {};
      }),
    ),
    NodeUnpublishVolume: unary(
      logged('NodeUnpublishVolume', async (req: PublishReq) => {
        const volumeId = requireString(req.volume_id, 'volume_id');
        const targetPath = await confinePath(req.target_path, 'target_path', roots);
        await volumes.exclusive(volumeId, () => volumes.unpublish(volumeId, targetPath));
        return {};
      }),
    ),
    NodeGetVolumeStats: unary(
      logged('NodeGetVolumeStats', async (req: { volume_id?: string; volume_path?: string }) => {
        const volumeId = requireString(req.volume_id, 'volume_id');
        const path = await confinePath(req.volume_path, 'volume_path', roots);
        return volumes.stats(volumeId, path);
      }),
    ),
    NodeExpandVolume: unary(
      logged(
        'NodeExpandVolume',
        async (req: {
          volume_id?: string;
          volume_path?: string;
          capacity_range?: { required_bytes?: string; limit_bytes?: string } | null;
        }) => {
          const volumeId = requireString(req.volume_id, 'volume_id');
          const path = await confinePath(req.volume_path, 'volume_path', roots);
          const required = Number(req.capacity_range?.required_bytes ?? 0);
          const limit = Number(req.capacity_range?.limit_bytes ?? 0);
          if (!Number.isSafeInteger(required) || required < 0 || !Number.isSafeInteger(limit) || limit < 0)
            throw invalid('capacity_range must hold non-negative byte counts');
          if (limit && required > limit) throw invalid('capacity_range.required_bytes exceeds limit_bytes');
          const bytes = await volumes.exclusive(volumeId, () => volumes.expand(volumeId, path, required));
          if (limit && bytes > limit)
            throw new GrpcError(
              status.OUT_OF_RANGE,
              `volume ${volumeId} is ${bytes} bytes, above limit_bytes ${limit}`,
            );
          return { capacity_bytes: String(bytes) };
        },
      ),
    ),
  };
}
