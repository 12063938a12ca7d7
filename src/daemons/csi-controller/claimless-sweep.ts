import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/orphans/kube/client.js';
import { indexClaims, isClaimed } from '../../lib/orphans/volumes-without-claims.js';
import type { RestClient } from '../../lib/rest/client.js';
import { RestError } from '../../lib/rest/errors.js';

export type OrphanGc = 'off' | 'report' | 'delete';

/**
 * The controller's optional sweep of volumes Kubernetes no longer knows (no PV, no PVC): a volume
 * first seen without a claim is checked again after a grace period and only then reported — and
 * deleted through core only with `--orphan-gc delete`. Reporting is the default: deleting the
 * volume of a Retain PV whose objects were removed by hand would lose data (seed 002).
 */
export class ClaimlessSweep {
  /** Volume → when it was first seen without a claim. */
  private readonly unclaimedSince = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> = Promise.resolve();

  constructor(
    private readonly o: {
      mode: Exclude<OrphanGc, 'off'>;
      rest: RestClient;
      kube: KubeClient;
      log: Logger;
      periodMs: number;
      graceMs: number;
    },
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.sweep()
        .catch((err: Error) =>
          this.o.log.warn({ err: err.message }, 'orphan sweep failed; next one at the next period'),
        )
        .finally(() => {
          if (this.timer) this.timer = setTimeout(tick, this.o.periodMs);
        });
    };
    this.timer = setTimeout(tick, this.o.periodMs);
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private async claims() {
    const [pvs, pvcs] = await Promise.all([
      this.o.kube.listPersistentVolumes(),
      this.o.kube.listPersistentVolumeClaims(),
    ]);
    return indexClaims(pvs, pvcs, this.o.kube.access.source);
  }

  private async sweep(): Promise<void> {
    const now = Date.now();
    const index = await this.claims();
    const volumes = (await this.o.rest.listVolumes()).filter((v) => v.spec.status === 'Created');
    const seen = new Set<string>();
    const due: string[] = [];
    for (const v of volumes) {
      if (isClaimed(index, v.spec.uuid)) continue;
      seen.add(v.spec.uuid);
      const since = this.unclaimedSince.get(v.spec.uuid) ?? now;
      this.unclaimedSince.set(v.spec.uuid, since);
      if (now - since >= this.o.graceMs) due.push(v.spec.uuid);
    }
    for (const id of [...this.unclaimedSince.keys()]) if (!seen.has(id)) this.unclaimedSince.delete(id);
    if (!due.length) return;
    // Past the grace period: ask the API server once more before saying (or doing) anything.
    const again = await this.claims();
    for (const id of due) {
      if (isClaimed(again, id)) {
        this.unclaimedSince.delete(id);
        continue;
      }
      this.o.log.warn(
        { volume: id, source: again.source, action: this.o.mode },
        'volume has no PersistentVolume and no PersistentVolumeClaim',
      );
      if (this.o.mode === 'delete') {
        try {
          await this.o.rest.deleteVolume(id, { ifUnpublished: true });
        } catch (err) {
          // Published, it is in use all the same: left alone, and the others are still swept.
          if (!(err instanceof RestError && err.details === 'VolumePublished')) throw err;
          this.o.log.warn({ volume: id }, 'volume without claims is published (in use): not deleted');
          continue;
        }
        this.unclaimedSince.delete(id);
        this.o.log.warn({ volume: id }, 'orphaned volume deleted');
      }
    }
  }
}
