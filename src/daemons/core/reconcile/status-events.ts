import { TimeSlice } from '../../../lib/time-slice.js';
import type { CoreContext } from '../context.js';
import { type CoreEvent, makeEvent } from '../events.js';
import { poolFull, volumeStatus } from '../health.js';

/**
 * Health changes are lifecycle events too: a volume turning Degraded/Faulted/Online, a node going
 * Offline/Online and a pool filling up or getting room again each append one event, compared with
 * what this core saw last. The first sighting after start records a baseline, and an event only
 * when it is already unhealthy.
 *
 * A volume whose target's state core does not know (not polled yet after a restart, its node
 * unreachable) is `Unknown`: that is core's blind spot, not the volume's health, so it neither makes
 * an event nor replaces the last status seen. Otherwise a volume found Degraded after a restart
 * would never be reported, and its recovery would read "Unknown → Online".
 */
export class StatusEvents {
  private readonly lastVolume = new Map<string, string>();
  private readonly lastNode = new Map<string, boolean>();
  private readonly lastPoolFull = new Map<string, boolean>();
  private readonly lastPoolStatus = new Map<string, string>();

  async record(ctx: CoreContext): Promise<void> {
    const { registry } = ctx;
    const events: CoreEvent[] = [];
    for (const [id, live] of registry.nodeLive) {
      const was = this.lastNode.get(id);
      if (was !== undefined && was !== live.online) {
        events.push(
          makeEvent(
            'node',
            id,
            live.online ? 'Online' : 'Offline',
            live.online ? `io-engine at ${live.grpcEndpoint} is back` : 'liveness key expired',
          ),
        );
      }
      this.lastNode.set(id, live.online);
    }
    for (const [id, st] of registry.poolStates) {
      const full = poolFull(st);
      const was = this.lastPoolFull.get(id);
      if (full && !was)
        events.push(
          makeEvent(
            'pool',
            id,
            'Full',
            `pool ${id} on ${registry.pools.get(id)?.node ?? 'an unknown node'} is full (${st.free} of ${st.capacity} bytes free): thin writes there that need new space fail with ENOSPC; free space by deleting volumes or snapshots on it`,
          ),
        );
      else if (!full && was)
        events.push(makeEvent('pool', id, 'SpaceFreed', `pool ${id} has ${st.free} bytes free again`));
      this.lastPoolFull.set(id, full);
      const status = this.lastPoolStatus.get(id);
      if (st.status === 'Degraded' && status !== 'Degraded')
        events.push(
          makeEvent(
            'pool',
            id,
            'Degraded',
            `pool ${id} on ${registry.pools.get(id)?.node ?? 'an unknown node'}: ${st.reason ?? 'its io-engine reports it Degraded'}; no new replica is placed there while it is Degraded; check the disk`,
          ),
        );
      else if (st.status === 'Online' && status === 'Degraded')
        events.push(makeEvent('pool', id, 'Online', `pool ${id} is Online again`));
      this.lastPoolStatus.set(id, st.status);
    }
    for (const id of this.lastPoolFull.keys()) if (!registry.poolStates.has(id)) this.lastPoolFull.delete(id);
    for (const id of this.lastPoolStatus.keys())
      if (!registry.poolStates.has(id)) this.lastPoolStatus.delete(id);
    const slice = new TimeSlice();
    for (const v of registry.volumes.values()) {
      await slice.pause();
      if (v.operation || registry.isBusy('volume', v.uuid)) continue;
      const status = volumeStatus(registry, v);
      if (status === 'Unknown') continue;
      const was = this.lastVolume.get(v.uuid);
      // A target that shut itself down serves nothing until the volume is published again: say how.
      const next =
        status === 'Shutdown' && v.target
          ? `: its target nexus ${v.target.nexus} on ${v.target.node} shut itself down and serves no I/O; publish the volume again (\`storctl volume publish ${v.uuid} --node NODE --republish\`), as HA does by itself for a volume csi-node has staged`
          : '';
      if (was !== undefined && was !== status) {
        events.push(makeEvent('volume', v.uuid, status, `volume ${was} → ${status}${next}`));
      } else if (was === undefined && status !== 'Online') {
        // First sighting already unhealthy (it changed before this core looked, or while the store
        // took no writes): still worth an event.
        events.push(makeEvent('volume', v.uuid, status, `volume is ${status}${next}`));
      }
      this.lastVolume.set(v.uuid, status);
    }
    for (const id of this.lastVolume.keys()) if (!registry.volumes.has(id)) this.lastVolume.delete(id);
    for (let i = 0; i < events.length; i += 100) await registry.persist({ events: events.slice(i, i + 100) });
  }
}
