import { status } from '@grpc/grpc-js';
import { toCsiError } from '../../lib/csi/errors.js';
import type { NodePublishVolumeRequest, NodeUnpublishVolumeRequest } from '../../lib/csi/types.js';
import { invalid, validateNodePublish, validateNodeUnpublish } from '../../lib/csi/validate.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import type { Logger } from '../../lib/logger.js';
import { mountOperations } from '../../lib/metrics/catalog.js';
import { confinePath, rootOf } from '../../lib/mount/confine.js';
import { credentialsFromSecrets, type S3Credentials } from '../../lib/mount/credentials.js';
import { parseMountOptions, splitOptionString } from '../../lib/mount/options-policy.js';
import type { PublishResult, S3Volumes } from '../../lib/mount/s3-volumes.js';

// S3 bucket naming rules (3-63 characters, lowercase letters, digits, dots, hyphens).
const BUCKET_RE = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export interface NodeServiceDeps {
  nodeId: string;
  volumes: S3Volumes;
  driverCredentials: S3Credentials | undefined;
  log: Logger;
  /** Directories target paths must lie below; nothing outside them is ever created or removed. */
  roots: string[];
  /** Last publish timings, for the benchmark. */
  onPublished?: (r: PublishResult) => void;
}

const unimplemented = (rpc: string) =>
  unary(async () => {
    throw new GrpcError(status.UNIMPLEMENTED, `${rpc} is not implemented by the S3 mounter`);
  });

export function nodeService(deps: NodeServiceDeps) {
  const { log, volumes } = deps;
  return {
    NodePublishVolume: unary(async (req: NodePublishVolumeRequest) => {
      try {
        const { volumeId, mode, mountFlags } = validateNodePublish(req);
        const target = await confinePath(req.target_path, 'target_path', deps.roots);
        const ctx = req.volume_context ?? {};
        const bucket = ctx.bucketName;
        if (!bucket) throw invalid('volume_context.bucketName is required');
        if (!BUCKET_RE.test(bucket))
          throw invalid(`volume_context.bucketName '${bucket.slice(0, 64)}' is not a valid bucket name`);
        const options = parseMountOptions([...mountFlags, ...splitOptionString(ctx.mountOptions ?? '')]);
        const source = ctx.authenticationSource || 'driver';
        let credentials: S3Credentials | undefined;
        if (source === 'secret') {
          if (!Object.keys(req.secrets ?? {}).length)
            throw invalid(
              'authenticationSource is secret but the request carries no secrets (set the node-publish secret)',
            );
          credentials = credentialsFromSecrets(req.secrets);
        } else if (source === 'driver') {
          credentials = deps.driverCredentials;
          if (!credentials) {
            throw new GrpcError(
              status.FAILED_PRECONDITION,
              'no driver-level S3 credentials configured (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or --secrets-file); or use authenticationSource=secret',
            );
          }
        } else {
          throw invalid(`unknown authenticationSource '${source.slice(0, 32)}' (use driver or secret)`);
        }
        const readonly = req.readonly || mode === 'MULTI_NODE_READER_ONLY';
        log.info({ volumeId, target, bucket, readonly, source }, 'NodePublishVolume');
        const root = rootOf(target, deps.roots);
        const result = await counted(
          'publish',
          volumes.publish({ volumeId, target, bucket, readonly, options, credentials, root }),
        );
        log.info(
          {
            volumeId,
            target,
            reused: result.reused,
            recovered: result.recovered,
            ms: Math.round(result.totalMs),
          },
          'published',
        );
        deps.onPublished?.(result);
        return {};
      } catch (err) {
        const e = toCsiError(err);
        log.warn(
          { volumeId: req.volume_id, target: req.target_path, code: e.code, err: e.message },
          'NodePublishVolume failed',
        );
        throw e;
      }
    }),
    NodeUnpublishVolume: unary(async (req: NodeUnpublishVolumeRequest) => {
      try {
        const { volumeId } = validateNodeUnpublish(req);
        const target = await confinePath(req.target_path, 'target_path', deps.roots);
        const r = await counted('unpublish', volumes.unpublish(target));
        log.info({ volumeId, target, unmounted: r.unmounted }, 'unpublished');
        return {};
      } catch (err) {
        throw toCsiError(err);
      }
    }),
    NodeGetInfo: unary(async () => ({ node_id: deps.nodeId })),
    // Nothing to advertise: no staging, no stats, no expansion (an S3 bucket has no size).
    NodeGetCapabilities: unary(async () => ({ capabilities: [] })),
    NodeStageVolume: unimplemented('NodeStageVolume'),
    NodeUnstageVolume: unimplemented('NodeUnstageVolume'),
    NodeGetVolumeStats: unimplemented('NodeGetVolumeStats'),
    NodeExpandVolume: unimplemented('NodeExpandVolume'),
  };
}

/** storctl_mount_operations_total: each mount or unmount the mounter attempts, by result. */
async function counted<T>(operation: 'publish' | 'unpublish', work: Promise<T>): Promise<T> {
  try {
    const r = await work;
    mountOperations.inc({ operation, result: 'ok' });
    return r;
  } catch (err) {
    mountOperations.inc({ operation, result: 'failed' });
    throw err;
  }
}
