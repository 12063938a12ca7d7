import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { RestClient } from '../../../src/lib/rest/client.js';
import { nexusInfo } from '../../../src/lib/specs/index.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { qemuIo } from '../../integration/core/qemu.js';
import { UpHome } from './up-fixture.js';

const VOLUMES = 10;

/**
 * `storctl up` stopped cleanly and started again: every nexus shut down cleanly (NexusInfo says so
 * with every child healthy), so nothing is rebuilt; the io-engines come back on their ports, so
 * every volume is Online again at the target URI it had, with its data.
 */
describe('storctl up: a clean stop and a restart rebuild nothing (built CLI)', () => {
  const cluster = new UpHome();
  let up: StorctlProcess | undefined;
  const start = () => cluster.start();
  const endpoints = () => cluster.endpoints();

  afterAll(async () => {
    await up?.kill('SIGINT');
    rmSync(cluster.home, { recursive: true, force: true });
  });

  it(`${VOLUMES} published 3-replica volumes come back Online at the same URIs, nothing rebuilt`, async () => {
    up = await start();
    let rest = new RestClient(endpoints().rest);
    const uris = new Map<string, string>();
    try {
      for (let i = 0; i < VOLUMES; i++) {
        const id = crypto.randomUUID();
        await rest.createVolume(id, { size: 16 << 20, replicas: 3, thin: true, policy: { self_heal: true } });
        // Targets on every node, so each nexus has remote children on io-engines stopped before it.
        const v = await rest.publishVolume(id, {
          protocol: 'nbd',
          publish_context: {},
          node: `node-${(i % 3) + 1}`,
        });
        uris.set(id, v.state.target!.deviceUri);
        await qemuIo(v.state.target!.deviceUri, `write -P ${i + 1} 0 1M`);
      }
    } finally {
      await rest.close();
    }
    const store = endpoints().store as string;

    expect(await up.kill('SIGINT')).toBe(0);
    const kv = await openStore(store);
    try {
      const { kvs } = await kv.range('/openebs.io/mayastor/apis/v0/clusters/');
      const infos = kvs.filter((k) => k.key.endsWith('/info')).map((k) => nexusInfo.decode(k.key, k.value));
      expect(infos).toHaveLength(VOLUMES);
      for (const info of infos) {
        expect(info.clean_shutdown).toBe(true);
        expect(info.children.map((c) => c.healthy)).toEqual([true, true, true]);
      }
    } finally {
      await kv.close();
    }

    up = await start();
    // The banner says what came back, and where.
    expect(up.output).toContain(`volumes        ${VOLUMES} loaded, ${VOLUMES} published`);
    for (const uri of uris.values()) expect(up.output).toContain(uri);
    rest = new RestClient(endpoints().rest);
    try {
      await waitFor(
        async () => {
          const vols = await rest.listVolumes();
          return (
            vols.length === VOLUMES &&
            vols.every(
              (v) =>
                v.state.status === 'Online' &&
                v.state.target?.deviceUri === uris.get(v.spec.uuid) &&
                v.state.target?.children.every((c) => c.state === 'Online' && c.rebuildProgress == null),
            )
          );
        },
        { what: 'every volume Online at its old URI', timeoutMs: 30_000 },
      );
      let i = 0;
      for (const uri of uris.values()) await qemuIo(uri, `read -P ${++i} 0 1M`);
      for (const id of uris.keys()) {
        const history = await rest.call<{ records: unknown[] }>('GET', `/volumes/${id}/rebuild-history`);
        expect(history.records, `rebuilds of volume ${id}`).toEqual([]);
      }
    } finally {
      await rest.close();
    }
  }, 240_000);
});
