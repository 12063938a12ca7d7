import { describe, expect, it } from 'vitest';
import type { NexusState } from '../../../src/daemons/core/engine-api.js';
import { RebuildHistory, rebuildEvent } from '../../../src/daemons/core/rebuild-history.js';
import type { RebuildRecord } from '../../../src/lib/rest/types.js';

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

  it("takes the rebuild's start and end from the io-engine, not from when a poll saw them", () => {
    const h = new RebuildHistory();
    const start = Date.parse('2026-01-01T10:00:00.000Z');
    const times = { rebuildStartedAt: start, rebuildEndedAt: null };
    h.observe(nexus([online(SRC), { ...rebuilding(NEW, 10), ...times }]), h.tick());
    // Seen Online (a poll period later): the rebuild took 40 ms by the io-engine's clock.
    h.observe(
      nexus([online(SRC), { ...online(NEW), rebuildStartedAt: start, rebuildEndedAt: start + 40 }], 'Online'),
      h.tick(),
    );
    const [record] = h.of('n1');
    expect(record).toMatchObject({
      startTime: '2026-01-01T10:00:00.000Z',
      endTime: '2026-01-01T10:00:00.040Z',
    });
    expect(rebuildEvent('v', record).message).toMatch(/, 0\.0 s$/);
    // An end reported for another (later) rebuild of the child is not this one's: core's time.
    const h2 = new RebuildHistory();
    h2.observe(nexus([online(SRC), { ...rebuilding(NEW, 10), ...times }]), h2.tick());
    h2.observe(
      nexus(
        [online(SRC), { ...online(NEW), rebuildStartedAt: start + 5000, rebuildEndedAt: start + 6000 }],
        'Online',
      ),
      h2.tick(),
    );
    expect(Date.parse(h2.of('n1')[0].endTime)).toBeGreaterThan(start + 6000);
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

  it('a full rebuild that failed between two sightings got at least as far as the data it wrote', () => {
    const h = new RebuildHistory();
    h.observe(nexus([online(SRC), rebuilding(NEW, 2)]), h.tick());
    // Failed with 6 MiB of the 8 MiB written, its last progress seen at 2%.
    h.observe(
      nexus([
        online(SRC),
        { uri: NEW, state: 'Faulted', rebuildProgress: null, rebuildTransferredBytes: 6 * MiB },
      ]),
      h.tick(),
    );
    const [failed] = h.of('n1');
    expect(failed).toMatchObject({
      rebuildJobState: 'Failed',
      blocksRecovered: 12288,
      blocksTransferred: 12288,
    });
    expect(rebuildEvent('v1', failed).message).toMatch(/failed at 75%: 6MiB written/);
  });

  it('tells its listener of each rebuild once, when it ends, however it ends', () => {
    const ended: [string, RebuildRecord][] = [];
    const h = new RebuildHistory((nexus, record) => ended.push([nexus, record]));
    h.observe(nexus([online(SRC), rebuilding(NEW, 0)]), h.tick());
    h.observe(nexus([online(SRC), rebuilding(NEW, 60)]), h.tick());
    expect(ended).toEqual([]);
    h.observe(nexus([online(SRC), online(NEW)], 'Online'), h.tick());
    h.observe(nexus([online(SRC), online(NEW)], 'Online'), h.tick());
    expect(ended.map(([n, r]) => [n, r.childUri, r.rebuildJobState])).toEqual([['n1', NEW, 'Completed']]);
    h.observe(nexus([online(SRC), rebuilding(NEW, 25)]), h.tick());
    h.forget('n1');
    expect(ended.map(([, r]) => r.rebuildJobState)).toEqual(['Completed', 'Stopped']);
  });

  it('a finished rebuild is an event of its volume naming the replicas, what was written and how', () => {
    const record = (over: Partial<RebuildRecord>): RebuildRecord => ({
      childUri: NEW,
      srcUri: SRC,
      rebuildJobState: 'Completed',
      blocksTotal: 16384,
      blocksRecovered: 16384,
      blocksTransferred: 4096,
      blocksRemaining: 0,
      blockSize: 512,
      isPartial: true,
      startTime: '2026-11-27T20:00:00.000Z',
      endTime: '2026-11-27T20:00:01.500Z',
      ...over,
    });
    expect(rebuildEvent('vol-1', record({}))).toMatchObject({
      resource: 'volume',
      id: 'vol-1',
      action: 'Rebuilt',
      message: 'replica b rebuilt from a: 2MiB written, partial rebuild, 1.5 s',
    });
    expect(
      rebuildEvent('vol-1', record({ rebuildJobState: 'Failed', blocksRecovered: 4096, isPartial: false })),
    ).toMatchObject({
      action: 'RebuildFailed',
      message: 'rebuild of replica b from a failed at 25%: 2MiB written, full rebuild, 1.5 s',
    });
    expect(rebuildEvent('vol-1', record({ rebuildJobState: 'Stopped', srcUri: '' }))).toMatchObject({
      action: 'RebuildStopped',
      message: expect.stringMatching(/^rebuild of replica b from <none> stopped at 100%: /),
    });
  });
});
