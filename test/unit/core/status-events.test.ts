import { describe, expect, it } from 'vitest';
import type { CoreContext } from '../../../src/daemons/core/context.js';
import type { NexusState } from '../../../src/daemons/core/engine-api.js';
import { StatusEvents } from '../../../src/daemons/core/reconcile/status-events.js';
import type { CoreEvent } from '../../../src/lib/catalog/events.js';

const VOLUME = '9bb3fe47-b30f-4723-a48e-92b0f24e4fb7';
const NEXUS = '14d8ea0c-55a0-4c4c-8bbf-4c5f1b31517b';

/**
 * The registry reads a pass makes for one published 2-replica volume whose nexus lives on node-1:
 * `nexus` is the nexus state core polled (undefined: not known, as right after a restart).
 */
function clusterWith() {
  const persisted: CoreEvent[] = [];
  const nexusStates = new Map<string, Map<string, NexusState>>();
  const registry = {
    nodeLive: new Map(),
    poolStates: new Map(),
    pools: new Map(),
    volumes: new Map([
      [VOLUME, { uuid: VOLUME, num_replicas: 2, target: { node: 'node-1', nexus: NEXUS, active: true } }],
    ]),
    nexuses: new Map([[NEXUS, { uuid: NEXUS, node: 'node-1' }]]),
    nexusStates,
    isBusy: () => false,
    persist: async (change: { events: CoreEvent[] }) => {
      persisted.push(...change.events);
    },
  };
  const ctx = { registry } as unknown as CoreContext;
  const setNexus = (children: string[] | undefined, nexusState?: NexusState['state']) => {
    if (!children) return nexusStates.delete('node-1');
    const state: NexusState = {
      uuid: NEXUS,
      size: 1 << 20,
      state: nexusState ?? (children.every((c) => c === 'Online') ? 'Online' : 'Degraded'),
      children: children.map((state, i) => ({ uri: `bdev:///r${i}`, state })) as NexusState['children'],
      deviceUri: '',
      protocol: 'nbd',
    };
    nexusStates.set('node-1', new Map([[NEXUS, state]]));
  };
  return { ctx, persisted, setNexus, messages: () => persisted.map((e) => e.message) };
}

describe('volume status events', () => {
  it('reports a volume found Degraded after a restart, and its recovery from Degraded', async () => {
    const c = clusterWith();
    const watch = new StatusEvents();
    c.setNexus(undefined); // core just started: the nexus is not polled yet
    await watch.record(c.ctx);
    c.setNexus(['Online', 'Degraded']); // recreated from one healthy child, the other rebuilding
    await watch.record(c.ctx);
    c.setNexus(['Online', 'Online']);
    await watch.record(c.ctx);
    expect(c.messages()).toEqual(['volume is Degraded', 'volume Degraded → Online']);
    expect(c.persisted.map((e) => [e.resource, e.id, e.action])).toEqual([
      ['volume', VOLUME, 'Degraded'],
      ['volume', VOLUME, 'Online'],
    ]);
  });

  it('keeps the last known status while the target is unknown', async () => {
    const c = clusterWith();
    const watch = new StatusEvents();
    c.setNexus(['Online', 'Online']);
    await watch.record(c.ctx); // baseline: healthy, no event
    c.setNexus(undefined); // its node is unreachable
    await watch.record(c.ctx);
    c.setNexus(['Online', 'Online']); // back as it was: nothing happened to the volume's health
    await watch.record(c.ctx);
    expect(c.messages()).toEqual([]);
    c.setNexus(undefined);
    await watch.record(c.ctx);
    c.setNexus(['Online', 'Degraded']);
    await watch.record(c.ctx);
    expect(c.messages()).toEqual(['volume Online → Degraded']);
  });

  it('records nothing for a healthy first sighting, and each core keeps its own baseline', async () => {
    const c = clusterWith();
    c.setNexus(['Online', 'Online']);
    await new StatusEvents().record(c.ctx);
    c.setNexus(['Online', 'Degraded']);
    await new StatusEvents().record(c.ctx); // a new core: its first sighting, already unhealthy
    expect(c.messages()).toEqual(['volume is Degraded']);
  });

  it('a target that shut itself down is an event naming the way back, also when first seen so (the store took no writes then)', async () => {
    const next = `: its target nexus ${NEXUS} on node-1 shut itself down and serves no I/O; publish the volume again (\`storctl volume publish ${VOLUME} --node NODE --republish\`), as HA does by itself for a volume csi-node has staged`;
    const seen = clusterWith();
    const watch = new StatusEvents();
    seen.setNexus(['Online', 'Online']);
    await watch.record(seen.ctx);
    seen.setNexus(['Online', 'Online'], 'Shutdown');
    await watch.record(seen.ctx);
    expect(seen.messages()).toEqual([`volume Online → Shutdown${next}`]);
    // Before: a core started after the shutdown (its predecessor could not write the event) said nothing.
    const restarted = clusterWith();
    restarted.setNexus(['Online', 'Online'], 'Shutdown');
    await new StatusEvents().record(restarted.ctx);
    expect(restarted.messages()).toEqual([`volume is Shutdown${next}`]);
  });
});
