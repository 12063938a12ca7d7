import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { targetId } from '../../../src/lib/mount/unit-name.js';
import { publishRequest } from '../../helpers/csi-client.js';
import { waitFor } from '../../helpers/wait.js';
import { BUCKET, fuseProcessesBelow, processMounterFixture, startMounter, targetPath } from './fixture.js';
import { mounterSuite } from './suite.js';

const fx = processMounterFixture('storctl-procmnt');

mounterSuite('S3 mounter, process mounter (s3fs against s3rver)', () => ({
  env: fx.env,
  daemon: fx.daemon,
  csi: fx.csi,
  restart: () => fx.restart(),
  daemonsFor: async (target) =>
    (await fuseProcessesBelow(fx.env.root)).filter((p) => p.argv[2] === target).map((p) => `pid:${p.pid}`),
}));

describe('mount timeout', () => {
  it('an S3 endpoint that never answers: INTERNAL after --mount-timeout, daemon stopped, nothing left', async () => {
    // Accepts connections and never answers: s3fs hangs in its bucket check.
    const sockets: Socket[] = [];
    const blackHole = createServer((s) => sockets.push(s));
    blackHole.listen(0, '127.0.0.1');
    await once(blackHole, 'listening');
    const port = (blackHole.address() as { port: number }).port;
    const other = await startMounter(fx.env, {
      mounter: 'process',
      s3Endpoint: `http://127.0.0.1:${port}`,
      endpoint: `unix://${join(fx.env.root, 'sock-bh', 'csi.sock')}`,
      stateDir: join(fx.env.root, 'state-bh'),
      mountTimeoutMs: 1500,
    });
    try {
      const target = targetPath(fx.env, 'pod-bh', 'pv-bh');
      const t0 = Date.now();
      const err = await other.csi
        .node('NodePublishVolume', publishRequest({ volumeId: 'pv-bh', target, bucket: BUCKET }))
        .catch((e) => e);
      expect(err.code).toBe(status.INTERNAL);
      expect(err.details).toMatch(/timed out after 1500 ms waiting for the mount/);
      expect(Date.now() - t0).toBeLessThan(15_000);
      expect(existsSync(target)).toBe(false);
      await waitFor(
        async () => (await fuseProcessesBelow(fx.env.root)).filter((p) => p.argv[2] === target).length === 0,
        { what: 's3fs to be stopped' },
      );
      expect(await readdir(join(fx.env.root, 'state-bh', 'credentials'))).toEqual([]);
    } finally {
      other.csi.close();
      await other.daemon.stop();
      for (const s of sockets) s.destroy();
      blackHole.close();
    }
  });
});

describe('driver-level keys from a secrets file', () => {
  it('mounts with keys from a 0600 file; a group/world-readable file is refused at start', async () => {
    const file = join(fx.env.root, 'driver-keys');
    await writeFile(file, 'access_key_id=S3RVER\nsecret_access_key = from-file\n', { mode: 0o600 });
    const over = {
      mounter: 'process' as const,
      secretsFile: file,
      env: { PATH: process.env.PATH },
      endpoint: `unix://${join(fx.env.root, 'sock-sf', 'csi.sock')}`,
      stateDir: join(fx.env.root, 'state-sf'),
    };
    const other = await startMounter(fx.env, over);
    try {
      const target = targetPath(fx.env, 'pod-sf', 'pv-sf');
      await other.csi.node(
        'NodePublishVolume',
        publishRequest({ volumeId: 'pv-sf', target, bucket: BUCKET }),
      );
      expect(
        await readFile(
          join(fx.env.root, 'state-sf', 'credentials', `${targetId(target)}.passwd-s3fs`),
          'utf8',
        ),
      ).toBe('S3RVER:from-file\n');
      await other.csi.node('NodeUnpublishVolume', { volume_id: 'pv-sf', target_path: target });
    } finally {
      other.csi.close();
      await other.daemon.stop();
    }
    await chmod(file, 0o644);
    await expect(startMounter(fx.env, over)).rejects.toThrow(/must not be readable by group or others/);
  });
});
