import { status } from '@grpc/grpc-js';
import { GrpcError } from '../grpc/status.js';
import { validateTargetPath } from '../mount/target-path.js';
import type { NodePublishVolumeRequest, NodeUnpublishVolumeRequest, VolumeCapability } from './types.js';

/** CSI strings are limited to 128 bytes unless a field says otherwise. */
export const CSI_STRING_MAX = 128;

export const invalid = (message: string) => new GrpcError(status.INVALID_ARGUMENT, message);

export function requireString(value: string | undefined, field: string, max = CSI_STRING_MAX): string {
  if (!value) throw invalid(`${field} is required`);
  if (Buffer.byteLength(value) > max) throw invalid(`${field} is longer than ${max} bytes`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\x00-\x1f\x7f]/.test(value)) throw invalid(`${field} contains control characters`);
  return value;
}

export function requireTargetPath(value: string | undefined, field = 'target_path'): string {
  const problem = validateTargetPath(value ?? '', field);
  if (problem) throw invalid(problem);
  return value!;
}

/** The access modes a shared S3 bucket can honour. */
export const S3_ACCESS_MODES = ['MULTI_NODE_MULTI_WRITER', 'MULTI_NODE_READER_ONLY'] as const;

export function requireCapability(
  cap: VolumeCapability | null | undefined,
  allowedModes: readonly string[],
): { mode: string; mountFlags: string[] } {
  if (!cap) throw invalid('volume_capability is required');
  if (cap.block || cap.access_type === 'block')
    throw invalid('block access is not supported by this plugin; use a mount capability');
  if (!cap.mount) throw invalid('volume_capability.mount is required');
  const mode = cap.access_mode?.mode;
  if (!mode || mode === 'UNKNOWN') throw invalid('volume_capability.access_mode is required');
  if (!allowedModes.includes(mode))
    throw invalid(
      `volume capability not supported: access mode ${mode} (supported: ${allowedModes.join(', ')})`,
    );
  const flags = cap.mount.mount_flags ?? [];
  if (flags.reduce((n, f) => n + Buffer.byteLength(f), 0) > 4096)
    throw invalid('volume_capability.mount.mount_flags exceeds 4 KiB');
  return { mode, mountFlags: flags };
}

export function validateMapSize(map: Record<string, string> | undefined, field: string, max = 4096): void {
  const size = Object.entries(map ?? {}).reduce(
    (n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v),
    0,
  );
  if (size > max) throw invalid(`${field} exceeds ${max} bytes`);
}

export function validateNodePublish(req: NodePublishVolumeRequest) {
  const volumeId = requireString(req.volume_id, 'volume_id');
  const target = requireTargetPath(req.target_path);
  const cap = requireCapability(req.volume_capability, S3_ACCESS_MODES);
  validateMapSize(req.volume_context, 'volume_context');
  return { volumeId, target, ...cap };
}

export function validateNodeUnpublish(req: NodeUnpublishVolumeRequest) {
  return { volumeId: requireString(req.volume_id, 'volume_id'), target: requireTargetPath(req.target_path) };
}
