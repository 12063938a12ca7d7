import { ServiceUnavailableError, TimeoutError } from '../errors.js';
import { RestClient } from '../rest/client.js';
import type { Pool, Volume } from '../rest/types.js';

/** What core's REST API adds to the store: pool usage, volume health, target URIs, rebuild progress. */
export interface CoreLive {
  at: number;
  pools: Map<string, NonNullable<Pool['state']>>;
  volumes: Map<string, Volume>;
}

/**
 * Core's live state, asked again every `periodMs` (the store is watched; core's in-memory state is
 * not in the store, so it is the one thing polled). `onChange(null)` while core does not answer.
 */
export class LivePoller {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly client: RestClient;

  constructor(
    restUrl: string,
    /** The key space shown (`<cluster-id>/<namespace>`): a core serving another one is not asked. */
    cluster: string,
    private readonly onChange: (live: CoreLive | null) => void,
    private readonly periodMs = 3_000,
  ) {
    this.client = new RestClient(restUrl, { timeoutMs: 2_000, cluster });
  }

  start(): void {
    void this.poll();
  }

  private async poll(): Promise<void> {
    const started = Date.now();
    let live: CoreLive | null = null;
    try {
      const [pools, volumes] = await Promise.all([this.client.listPools(), this.client.listVolumes()]);
      live = {
        at: Date.now(),
        pools: new Map(pools.flatMap((p) => (p.state ? [[p.id, p.state] as const] : []))),
        volumes: new Map(volumes.map((v) => [v.spec.uuid, v])),
      };
    } catch (err) {
      // Unreachable or slow: shown as "store only" until core answers again. Anything else (a 5xx)
      // is the same to a viewer: the store's view stays, and core is asked again later.
      if (!(err instanceof ServiceUnavailableError || err instanceof TimeoutError)) live = null;
    }
    if (this.stopped) return;
    this.onChange(live);
    // A big cluster's listing takes a while: never spend more than a fifth of the time asking.
    const period = Math.max(this.periodMs, 5 * (Date.now() - started));
    this.timer = setTimeout(() => void this.poll(), live ? period : period * 3);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.client.close();
  }
}
