import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from '../core/cluster.js';
import { qemuIo } from '../core/qemu.js';
import { startHaCluster } from './fixture.js';

const MiB = 1 << 20;

/**
 * A switchover while every io-engine is down: core's republish tears the old target down, no node
 * can build the new one, and the volume is left unpublished. The switchover must publish it again
 * once a node is back, not end Errored ('not published') and leave the volume without a target.
 */
describe('a switchover whose republish found no node to build the target on', () => {
  let c: TestCluster;
  let ha: { proc: StorctlProcess; endpoint: string };
  beforeEach(async () => {
    // Core never marks the killed io-engines offline: the republish tries them and fails.
    c = await TestCluster.start({ engines: 2, coreFlags: coreFlags({ '--node-deadline': '1h' }) });
    // Retries every 200 ms, enough of them to outlast the io-engines' restart.
    ha = await startHaCluster(c, ['--max-retries', '300']);
  }, 90_000);
  afterEach(async () => {
    await ha?.proc.kill('SIGTERM');
    await c?.stop();
  });

  const eventsOf = async (id: string) =>
    (await c.events()).map((e) => JSON.parse(e) as { action: string; id: string }).filter((e) => e.id === id);

  /**
   * A published 2-replica volume holding 1 MiB of `pattern`; every io-engine killed; the switchover
   * `ask` asks for. Once the republish has failed on both nodes (the volume is left unpublished),
   * `meanwhile` runs, and the io-engines come back.
   */
  async function republishNowhere<T>(pattern: string, ask: (id: string) => T, meanwhile = async () => {}) {
    const id = newVolumeId();
    const v = await c.createPublished(id, { size: 8 * MiB, replicas: 2, node: 'node-1', selfHeal: true });
    await qemuIo(v.state.target!.deviceUri, `write -P ${pattern} 0 1M`);
    const engines = c.engines.map((e) => ({ node: e.node, grpc: e.grpc, nbd: e.nbd }));
    for (const e of c.engines) await e.proc.kill('SIGKILL');
    const asked = ask(id);
    try {
      await waitFor(
        async () => (await eventsOf(id)).filter((e) => e.action === 'PublishFailed').length >= 2,
        {
          what: 'the republish to fail on both nodes',
        },
      );
      await meanwhile();
    } finally {
      for (const e of engines) await c.startEngine(e.node, { grpc: e.grpc, nbd: e.nbd });
    }
    return { id, asked };
  }

  /** The volume has a target again, and it reads what was written before. */
  async function expectPublishedWith(id: string, pattern: string) {
    const after = await c.rest.getVolume(id);
    expect(after.state.target?.deviceUri).toBeTruthy();
    await qemuIo(after.state.target!.deviceUri, `read -P ${pattern} 0 1M`);
  }

  it('publishes the volume again once an io-engine is back, and the data is there', {
    timeout: 120_000,
  }, async () => {
    const { id, asked } = await republishNowhere('0x6b', (volume) => ({
      wait: runStorctl(['switchover', '--volume', volume, '--wait', '--timeout', '90s', '-o', 'json'], {
        env: c.env,
      }),
    }));
    const r = await asked.wait;
    expect(r.stderr).not.toContain('is not published');
    expect(r.code).toBe(0);
    expect((await eventsOf(id)).map((e) => e.action)).not.toContain('SwitchOverFailed');
    await expectPublishedWith(id, '0x6b');
  });

  it('an ha-cluster elected after the one whose republish failed was killed publishes it again too', {
    timeout: 150_000,
  }, async () => {
    const { id, asked } = await republishNowhere(
      '0x3c',
      (volume) => runStorctl(['switchover', '--volume', volume], { env: c.env }),
      async () => {
        // The ha-cluster that asked for the republish dies; the next one resumes the record.
        await ha.proc.kill('SIGKILL');
        ha = await startHaCluster(c, ['--max-retries', '300']);
      },
    );
    const r = await asked;
    expect(r.code, r.stderr).toBe(0);
    const ended = (actions: string[]) =>
      actions.includes('SwitchOverCompleted') || actions.includes('SwitchOverFailed');
    const actions = await waitFor(
      async () => {
        const seen = (await eventsOf(id)).map((e) => e.action);
        return ended(seen) ? seen : null;
      },
      { what: 'the switchover to end', timeoutMs: 90_000 },
    );
    expect(actions).not.toContain('SwitchOverFailed');
    expect(actions).toContain('SwitchOverCompleted');
    await expectPublishedWith(id, '0x3c');
  });
});
