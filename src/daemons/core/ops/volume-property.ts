import type { VolumeSpec } from '../../../lib/specs/index.js';
import type { CoreContext } from '../context.js';
import { makeEvent } from '../events.js';
import { SvcError } from '../svc-error.js';
import { checkUsable } from './volume-publish.js';

/** The volume properties REST can set (Mayastor `SetVolumeProperty`; today only `max_snapshots`). */
export interface VolumeProperty {
  max_snapshots: number;
}

/**
 * Set a volume property. Nothing on the io-engines changes, so the spec is written once (no
 * operation record needed). Snapshot creation reads `max_snapshots` and refuses beyond it.
 */
export async function setVolumeProperty(
  ctx: CoreContext,
  uuid: string,
  prop: VolumeProperty,
): Promise<VolumeSpec> {
  const { registry } = ctx;
  return registry.exclusive('volume', uuid, async () => {
    const volume = registry.volume(uuid);
    checkUsable(volume);
    const count = registry.volumeSnapshots(uuid).length;
    if (prop.max_snapshots < count) {
      throw new SvcError(
        'InvalidArgument',
        `volume '${uuid}' already has ${count} snapshot(s); max_snapshots must be at least ${count} (delete snapshots first)`,
        `InvalidSetProperty: max_snapshots ${prop.max_snapshots} < ${count} snapshots of volume ${uuid}`,
      );
    }
    if (volume.max_snapshots === prop.max_snapshots) return volume;
    volume.max_snapshots = prop.max_snapshots;
    await registry.persist({
      volumes: [volume],
      events: [makeEvent('volume', uuid, 'PropertySet', `max_snapshots = ${prop.max_snapshots}`)],
    });
    return volume;
  });
}
