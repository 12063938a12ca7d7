import { reconcileDuration } from '../../../lib/metrics/catalog.js';
import type { CoreContext } from '../context.js';
import { eventsToTrim } from '../events.js';
import { reconcileDirtySpecs } from '../recovery.js';
import { pollEngines, pollNodeWithin, unpolledNodes } from './cache.js';
import { drainNodes } from './drain.js';
import { collectNexuses, collectReplicas, collectSnapshots, collectVolumes } from './gc.js';
import { reconcilePools } from './pools.js';
import { StatusEvents } from './status-events.js';
import { healVolumes, recreateMissingNexuses } from './volumes.js';

/**
 * The reconcile worker (docs/mayastor-compat.md §4.3): one pass runs every reconciler in the seed's priority
 * order — persistent store, pools, replicas, nexuses, targets — then sleeps the reconcile period if
 * any reported work, else the idle period; `wake()` cuts the sleep short.
 */
export class ReconcileLoop {
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  /** wake() was called since the last pass began: the next pass runs without a sleep. */
  private woken = false;
  /** performance.now() of the last cache poll and GC (-Infinity: due at once). */
  private lastPoll = Number.NEGATIVE_INFINITY;
  private lastGc = Number.NEGATIVE_INFINITY;
  private running: Promise<void> | null = null;
  private readonly statusEvents = new StatusEvents();
  /** Passes completed (tests and the bench wait on it). */
  passes = 0;

  constructor(private readonly ctx: CoreContext) {}

  /**
   * Run passes in the background, the first one a period after the pass core ran before it was
   * ready (`lastPassBusy`: what that pass reported). Passing straight on would repeat a whole pass
   * over every volume while the first REST requests arrive.
   */
  start(lastPassBusy: boolean): void {
    this.running = this.run(lastPassBusy);
  }

  wake(): void {
    this.lastPoll = Number.NEGATIVE_INFINITY;
    this.woken = true;
    this.wakeUp?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    await this.running;
  }

  private async step(name: string, fn: () => Promise<unknown>): Promise<unknown> {
    if (this.stopped || this.ctx.registry.writer.leaseLost) return false;
    const end = reconcileDuration.startTimer({ reconciler: name });
    try {
      return await fn();
    } catch (err) {
      this.ctx.log.warn({ reconciler: name, err: (err as Error).message }, 'reconciler failed');
      return true;
    } finally {
      end();
    }
  }

  /** One full pass; exported for tests that drive reconciliation deterministically. */
  async pass(): Promise<boolean> {
    const { config, registry } = this.ctx;
    const endPass = reconcileDuration.startTimer({ reconciler: 'pass' });
    let busy = false;
    this.woken = false;
    const now = performance.now();
    await registry.writer.verify().catch(() => {});
    if (now - this.lastPoll >= config.cachePeriodMs) {
      this.lastPoll = now;
      await this.step('nodes', () => registry.refreshNodes());
      await this.step('cache', () => pollEngines(this.ctx));
      await this.step('status-events', () => this.statusEvents.record(this.ctx));
    } else {
      // An online io-engine whose poll failed (or never ran since it restarted) is polled again now,
      // not a cache period later: until then its pools are not re-imported nor its replicas seen.
      const unpolled = unpolledNodes(this.ctx);
      if (unpolled.length)
        await this.step('cache', () => Promise.all(unpolled.map((node) => pollNodeWithin(this.ctx, node))));
    }
    busy = Boolean(await this.step('persistent-store', () => reconcileDirtySpecs(this.ctx))) || busy;
    busy = Boolean(await this.step('pools', () => reconcilePools(this.ctx))) || busy;
    const gc = now - this.lastGc >= config.gcPeriodMs;
    if (gc) {
      this.lastGc = now;
      await this.step('volume-gc', () => collectVolumes(this.ctx));
      await this.step('replica-gc', () => collectReplicas(this.ctx));
      await this.step('nexus-gc', () => collectNexuses(this.ctx));
      await this.step('snapshot-gc', () => collectSnapshots(this.ctx));
      await this.step('events-trim', async () => {
        const old = await eventsToTrim(registry.store, registry.space, config.eventsKept);
        for (let i = 0; i < old.length; i += 100) await registry.writer.write([], old.slice(i, i + 100));
      });
    }
    busy = Boolean(await this.step('nexus-recreate', () => recreateMissingNexuses(this.ctx))) || busy;
    busy = Boolean(await this.step('self-heal', () => healVolumes(this.ctx))) || busy;
    busy = Boolean(await this.step('drain', () => drainNodes(this.ctx))) || busy;
    this.passes++;
    endPass();
    return busy;
  }

  private async run(busy: boolean): Promise<void> {
    while (!this.stopped) {
      const { reconcilePeriodMs, reconcileIdlePeriodMs } = this.ctx.config;
      if (!this.woken)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, busy ? reconcilePeriodMs : reconcileIdlePeriodMs);
          this.wakeUp = () => {
            clearTimeout(t);
            resolve();
          };
        });
      this.wakeUp = null;
      if (this.stopped) break;
      busy = await this.pass();
    }
  }
}
