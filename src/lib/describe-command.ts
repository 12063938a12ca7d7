import { type ClusterState, type Mentioning, readCluster } from './catalog/cluster.js';
import { type CoreEvent, listEvents } from './catalog/events.js';
import { type LiveKind, type LiveState, liveRestUrl, readLive } from './catalog/live.js';
import { withStore } from './catalog/with-store.js';
import { StorctlCommand } from './command.js';
import { type Page, pageLines, pageObject } from './describe/page.js';
import { prettyJson } from './output/render.js';
import { toYaml } from './output/yaml.js';
import { clusterHeaderValue } from './rest/endpoint.js';
import type { SpecType } from './specs/index.js';
import type { Store } from './store/types.js';

/** Events read for a page: enough history for one object's recent ones. */
const EVENTS_READ = 2000;

/**
 * Base of `storctl describe …`: the stored specs, the recent events and (when core answers) core's
 * live state of one object, printed as a page; -o json|yaml print the same page as one object.
 */
export abstract class DescribeCommand extends StorctlCommand {
  protected async gather(
    types: readonly (SpecType | 'NodeLiveness')[],
    liveKinds: readonly LiveKind[],
    scope: {
      /**
       * Of the related types, only what mentions the object is read (readCluster); as a function, it
       * is worked out from the open store first (a node's replicas are those on its pools).
       */
      mentioning?: Mentioning | ((store: Store) => Promise<Mentioning>);
      /** The volumes core is asked for (default: all of them, when liveKinds has 'volumes'). */
      volumesOf?: (state: ClusterState) => string[];
    } = {},
  ): Promise<{
    state: ClusterState;
    events: CoreEvent[];
    live: LiveState | null;
    restUrl: string | null;
  }> {
    const { state, events } = await withStore(this.globals, async (store) => {
      const mentioning =
        typeof scope.mentioning === 'function' ? await scope.mentioning(store) : scope.mentioning;
      return {
        state: await readCluster(store, this.globals.keySpace, types, mentioning),
        events: (await listEvents(store, this.globals.keySpace, { limit: EVENTS_READ })).events,
      };
    });
    const restUrl = liveRestUrl(this.globals.storeUrl);
    const answer =
      restUrl && liveKinds.length
        ? await readLive(
            restUrl,
            liveKinds,
            clusterHeaderValue(this.globals.keySpace),
            scope.volumesOf?.(state),
          )
        : null;
    const live = answer && 'live' in answer ? answer.live : null;
    return { state, events, live, restUrl };
  }

  protected printPage(page: Page): void {
    const format = this.globals.output;
    if (format === 'json') this.log(prettyJson(pageObject(page)));
    else if (format === 'yaml') this.log(toYaml(pageObject(page)).trimEnd());
    else for (const line of pageLines(page)) this.log(line);
  }
}
