import type { VolumeSnapshot } from './types.js';

/** The size of a volume restored from the snapshot: its source volume's size when it was taken. */
export function snapshotSize(s: VolumeSnapshot): number {
  const m = s.definition.metadata;
  return m.spec_size ?? m.size;
}
