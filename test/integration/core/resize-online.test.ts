import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import type { RestError } from '../../../src/lib/rest/errors.js';
import { runStorctl } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, newVolumeId, TestCluster } from './cluster.js';
import { qemuIo } from './qemu.js';

const exec = promisify(execFile);
const MiB = 1 << 20;

/** The export size a new NBD connection negotiates. */
async function nbdSize(uri: string): Promise<number> {
  const { stdout } = await exec('nbdinfo', ['--size', uri], { timeout: 30_000 });
  return Number(stdout.trim());
}

interface Specs {
  volumes: { uuid: string; size: number; operation: unknown }[];
  replicas: { uuid: string; size: number; owners: { volume: string | null }; operation: unknown }[];
  nexuses: { uuid: string; owner: string | null; size: number }[];
}

/**
 * Online volume expansion: `PUT /volumes/{id}/size` on a published volume grows every replica, then
 * the live nexus (io-engine ResizeNexus), without unpublishing. New NBD connections see the new size
 * and can use the bytes past the old end; the data written before stays.
 */
for (const backend of ['embedded', 'etcd'] as Backend[])
  describe(`online resize of a published volume (${backend} store)`, () => {
    let cluster: TestCluster | undefined;
    afterEach(async () => {
      await cluster?.stop();
      cluster = undefined;
    });

    it('grows a published 3-replica volume through REST and the CLI; shrink is 406', async () => {
      cluster = await TestCluster.start({ backend, engines: 3 });
      const c = cluster;
      const id = newVolumeId();
      const published = await c.createPublished(id, { size: 16 * MiB, replicas: 3, node: 'node-1' });
      const uri = published.state.target!.deviceUri;
      await qemuIo(uri, 'write -P 0x5a 0 4M', 'write -P 0x6b 12M 4M');

      const grown = await c.rest.resizeVolume(id, 32 * MiB);
      expect(grown.spec.size).toBe(32 * MiB);
      expect(grown.spec.operation).toBeUndefined();
      const v = await waitFor(
        async () => {
          const got = await c.rest.getVolume(id);
          return got.state.size === 32 * MiB && got.state.target?.size === 32 * MiB ? got : null;
        },
        { what: 'volume state at 32 MiB', timeoutMs: 15_000 },
      );
      expect(v.state.target!.deviceUri).toBe(uri); // still published at the same target
      expect(v.state.status).toBe('Online');
      const specs = await c.rest.call<Specs>('GET', '/specs');
      const mine = specs.replicas.filter((r) => r.owners.volume === id);
      expect(mine).toHaveLength(3);
      for (const r of mine) {
        expect(r.size).toBe(32 * MiB);
        expect(r.operation ?? null).toBeNull();
      }
      expect(specs.nexuses.find((n) => n.owner === id)?.size).toBe(32 * MiB);

      // A new connection sees the new size; the bytes past the old end are usable; old data intact.
      expect(await nbdSize(uri)).toBe(32 * MiB);
      await qemuIo(uri, 'write -P 0x7c 20M 1M', 'write -P 0x7d 31M 1M');
      await qemuIo(
        uri,
        'read -P 0x5a 0 4M',
        'read -P 0x6b 12M 4M',
        'read -P 0 16M 4M',
        'read -P 0x7c 20M 1M',
        'read -P 0x7d 31M 1M',
      );

      // Shrinking (or the same size) is refused with 406 VolumeResizeSize; nothing changes.
      for (const size of [8 * MiB, 32 * MiB]) {
        const err = (await c.rest.resizeVolume(id, size).catch((e: RestError) => e)) as RestError;
        expect(err.status).toBe(406);
        expect(err.kind).toBe('NotAcceptable');
      }
      expect((await c.rest.getVolume(id)).spec.size).toBe(32 * MiB);

      // The CLI on the published volume: grows it and says connected clients keep the old size.
      const cli = await runStorctl(['volume', 'resize', id, '--size', '48MiB', '-o', 'json'], { env: c.env });
      expect(cli.code, cli.stderr).toBe(0);
      expect(JSON.parse(cli.stdout).spec.size).toBe(48 * MiB);
      expect(cli.stderr).toMatch(/clients already connected keep the old size until they reconnect/);
      expect(await nbdSize(uri)).toBe(48 * MiB);
      await qemuIo(uri, 'write -P 0x8e 47M 1M');
      await qemuIo(uri, 'read -P 0x5a 0 4M', 'read -P 0x7d 31M 1M', 'read -P 0x8e 47M 1M');
      const shrink = await runStorctl(['volume', 'resize', id, '--size', '16MiB'], { env: c.env });
      expect(shrink.code).not.toBe(0);
      expect(shrink.stderr).toMatch(
        /must be larger than the current 50331648 \(48MiB\): a volume only grows\n/,
      );
      expect(shrink.stderr).not.toContain('Try:');

      // Unpublish and publish again: the recreated nexus has the new size and the data.
      await c.rest.unpublishVolume(id);
      const again = await c.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-2' });
      expect(again.state.target!.size).toBe(48 * MiB);
      await qemuIo(again.state.target!.deviceUri, 'read -P 0x6b 12M 4M', 'read -P 0x8e 47M 1M');
    }, 120_000);
  });
