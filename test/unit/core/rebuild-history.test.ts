import { describe, expect, it } from 'vitest';
import type { NexusState } from '../../../src/daemons/core/engine-api.js';
import { RebuildHistory } from '../../../src/daemons/core/rebuild-history.js';

const MiB = 1 << 20;
const SRC = 'bdev:///a?uuid=a';
const NEW = 'nbd://127.0.0.1:1/b?uuid=b';

const nexus = (children: NexusState['children'], state = 'Degraded'): NexusState => ({
  uuid: 'n1',
  size: 8 * MiB,
  state,
  deviceUri: '',
  protocol: 'nbd',
  children,
});
const online = (uri: string) => ({ uri, state: 'Online', rebuildProgress: null });
const rebuilding = (uri: string, p: number) => ({ uri, state: 'Degraded', rebuildProgress: p });

describe('rebuild history as core observes it', () => {
  it('a child seen rebuilding and later Online is one Completed record with every block', () => {
    const h = new RebuildHistory();
    h.observe(nexus([online(SRC), rebuilding(NEW, 0)]), h.tick());
    h.observe(nexus([online(SRC), rebuilding(NEW, 40)]), h.tick());
    expect(h.of('n1')).toEqual([]);
    h.observe(nexus([online(SRC), online(NEW)], 'Online'), h.tick());
    expect(h.of('n1')).toEqual([
      expect.objectContaining({
        childUri: NEW,
        srcUri: SRC,
        rebuildJobState: 'Completed',
        blocksTotal: 16384,
        blocksRecovered: 16384,
        blocksRemaining: 0,
        blockSize: 512,
        isPartial: false,
      }),
    ]);
  });

  it('a partial rebuild is recorded as such, with the data it wrote as transferred', () => {
    const h = new RebuildHistory();
    const partial = (p: number, bytes: number) => ({
      ...rebuilding(NEW, p),
      rebuildPartial: true,
      rebuildTransferredBytes: bytes / 2,
    });
    h.observe(nexus([online(SRC), partial(0, 0)]), h.tick());
    h.observe(nexus([online(SRC), partial(50, MiB / 2)]), h.tick());
    // the Online child reports the data its last rebuild wrote: 1 MiB
    h.observe(
      nexus([online(SRC), { ...online(NEW), rebuildPartial: true, rebuildTransferredBytes: MiB }], 'Online'),
      h.tick(),
    );
    expect(h.of('n1')).toEqual([
      expect.objectContaining({
        rebuildJobState: 'Completed',
        blocksTotal: 16384,
        blocksRecovered: 16384,
        blocksTransferred: 2048,
        isPartial: true,
      }),
    ]);
  });

  it('an answer asked before the rebuild was first seen does not end it (concurrent poll)', () => {
    const h = new RebuildHistory();
    const pollAsked = h.tick();
    h.observe(nexus([online(SRC), rebuilding(NEW, 0)]), h.tick(), 'node-1'); // the add-child answer
    h.observeNode('node-1', [nexus([online(SRC)], 'Online')], pollAsked); // stale listing, child absent
    h.observeNode('node-1', [], pollAsked); // stale listing, nexus absent
    expect(h.of('n1')).toEqual([]);
    h.observe(nexus([online(SRC), online(NEW)], 'Online'), h.tick());
    expect(h.of('n1').map((r) => r.rebuildJobState)).toEqual(['Completed']);
  });

  it('a child faulted while rebuilding is Failed with the blocks copied so far; a destroyed nexus forgets', () => {
    const h = new RebuildHistory();
    h.observe(nexus([online(SRC), rebuilding(NEW, 50)]), h.tick());
    h.observe(nexus([online(SRC), { uri: NEW, state: 'Faulted', rebuildProgress: null }]), h.tick());
    expect(h.of('n1')).toEqual([
      expect.objectContaining({ rebuildJobState: 'Failed', blocksRecovered: 8192, blocksRemaining: 8192 }),
    ]);
    h.observe(nexus([online(SRC), rebuilding(NEW, 10)]), h.tick(), 'node-1');
    h.observeNode('node-1', [], h.tick()); // the nexus vanished from its node
    expect(h.of('n1').map((r) => r.rebuildJobState)).toEqual(['Failed', 'Stopped']);
    h.forget('n1');
    expect(h.of('n1')).toEqual([]);
  });
});
