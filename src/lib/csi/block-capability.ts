import type { VolumeCapability } from './types.js';

/**
 * What a replicated block volume can honour: one node at a time (it is published through one NBD
 * target to one frontend node), as a raw block device or a filesystem the node plugin formats.
 */
export const BLOCK_ACCESS_MODES = ['SINGLE_NODE_WRITER', 'SINGLE_NODE_READER_ONLY'] as const;
export const BLOCK_FS_TYPES = ['ext4', 'xfs'] as const;

/** Why `cap` cannot be served, or null when it can. */
export function blockCapabilityProblem(cap: VolumeCapability | null | undefined): string | null {
  if (!cap) return 'a volume capability is empty';
  const isBlock = cap.access_type === 'block' || (!!cap.block && !cap.mount);
  const isMount = cap.access_type === 'mount' || (!!cap.mount && !cap.block);
  if (!isBlock && !isMount) return 'volume_capability needs one of block or mount';
  const mode = cap.access_mode?.mode;
  if (!mode || mode === 'UNKNOWN') return 'volume_capability.access_mode is required';
  if (!(BLOCK_ACCESS_MODES as readonly string[]).includes(mode))
    return `access mode ${mode} is not supported (supported: ${BLOCK_ACCESS_MODES.join(', ')})`;
  if (isMount) {
    const fs = cap.mount?.fs_type ?? '';
    if (fs !== '' && !(BLOCK_FS_TYPES as readonly string[]).includes(fs))
      return `fs_type '${fs.slice(0, 32)}' is not supported (supported: ${BLOCK_FS_TYPES.join(', ')})`;
    const flags = cap.mount?.mount_flags ?? [];
    if (flags.reduce((n, f) => n + Buffer.byteLength(f), 0) > 4096)
      return 'volume_capability.mount.mount_flags exceeds 4 KiB';
  }
  return null;
}

/** A stable text of a capability, for comparing repeated requests. */
export function capabilityKey(cap: VolumeCapability): string {
  const kind = cap.access_type === 'block' || (cap.block && !cap.mount) ? 'block' : 'mount';
  const fs = kind === 'mount' ? (cap.mount?.fs_type ?? '') : '';
  const flags = kind === 'mount' ? [...(cap.mount?.mount_flags ?? [])].sort().join(',') : '';
  return `${kind}:${cap.access_mode?.mode ?? ''}:${fs}:${flags}`;
}
