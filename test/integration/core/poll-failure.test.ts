import { afterEach, describe, expect, it } from 'vitest';
import { metricsUrl, reconcilerRuns } from '../../helpers/metrics.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, TestCluster } from './cluster.js';

/** Core's log lines (pino JSON) with this message. */
const logged = (c: TestCluster, msg: string) =>
  c.cores[0].output
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}`))
    .map((l) => JSON.parse(l) as { level: number; node?: string; err?: string });

const firstLogged = (c: TestCluster, msg: string) =>
  waitFor(() => logged(c, msg)[0] ?? null, { what: `'${msg}' in core's log` });

/** Cache steps (polls of every io-engine) core has run so far. */
const polls = (c: TestCluster) => reconcilerRuns(metricsUrl(c.cores[0])!, 'cache');

/**
 * While core cannot poll an io-engine it sees none of that node's replica or nexus state; an
 * operator reading core's log must learn that — once, not once per pass — and when it ends.
 */
describe('an io-engine core cannot poll', () => {
  let c: TestCluster | undefined;
  afterEach(async () => {
    await c?.stop();
    c = undefined;
  });

  it('is warned about once with the node and the cause, however many polls fail', async () => {
    // Every call to the io-engine misses its deadline: each poll fails the same way.
    c = await TestCluster.start({
      engines: 1,
      pools: false,
      coreFlags: coreFlags({ '--request-timeout': '1ms' }),
    });
    const warned = await firstLogged(c, 'io-engine poll failed');
    expect(warned).toMatchObject({ level: 40, node: 'node-1' });
    expect(warned.err).toMatch(/io-engine node-1: .*deadline/i);
    const after = await polls(c);
    await waitFor(async () => (await polls(c!)) >= after + 3 || null, { what: 'three more polls' });
    expect(logged(c, 'io-engine poll failed')).toHaveLength(1);
    expect(logged(c, 'io-engine poll works again')).toHaveLength(0);
  }, 60_000);

  it('says when polling works again', async () => {
    c = await TestCluster.start({ engines: 1, coreFlags: coreFlags({ '--request-timeout': '500ms' }) });
    const engine = c.engine('node-1');
    process.kill(engine.proc.pid, 'SIGSTOP');
    try {
      expect(await firstLogged(c, 'io-engine poll failed')).toMatchObject({ level: 40, node: 'node-1' });
    } finally {
      process.kill(engine.proc.pid, 'SIGCONT');
    }
    expect(await firstLogged(c, 'io-engine poll works again')).toMatchObject({ level: 30, node: 'node-1' });
  }, 60_000);

  it("holds up none of core's other work while it does not answer", async () => {
    // Core waits an hour for an io-engine's answer: the node's Offline event below is said only by
    // passes that go on without that answer.
    c = await TestCluster.start({
      engines: 2,
      pools: false,
      coreFlags: coreFlags({ '--request-timeout': '1h' }),
    });
    const cluster = c;
    const engine = c.engine('node-2');
    process.kill(engine.proc.pid, 'SIGSTOP');
    try {
      // Stopped, it lets its liveness lease run out: the node is Offline, and core says so.
      await waitFor(
        async () => (await cluster.events()).some((e) => e.includes('"node-2"') && e.includes('"Offline"')),
        { what: "core's Offline event for node-2" },
      );
    } finally {
      process.kill(engine.proc.pid, 'SIGCONT');
    }
  }, 60_000);
});
