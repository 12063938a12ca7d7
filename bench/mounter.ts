/**
 * NodePublishVolume latency of the S3 mounter, per mounter (process, systemd), split into our own
 * overhead and the FUSE daemon's start (spawn/unit start until the mount answers), plus the
 * throughput of 50 concurrent publishes. Real s3fs against s3rver on 127.0.0.1; the systemd
 * mounter runs against the test sandbox's systemd. Needs root and /dev/fuse.
 *   npx tsx bench/mounter.ts [--iterations 30]
 * Prints one JSON object.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MounterDaemon, start } from '../src/daemons/mounter/index.js';
import { CsiClient, publishRequest } from '../test/helpers/csi-client.js';
import { S3RVER_KEYS, S3Server } from '../test/helpers/s3.js';
import { SystemdSandbox } from '../test/helpers/systemd-sandbox.js';

const iterations = Number(process.argv[process.argv.indexOf('--iterations') + 1]) || 30;
const CONCURRENT = 50;
const BUCKET = 'benchbucket';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] * 10) / 10;
};
const stats = (xs: number[]) => ({ p50: pct(xs, 50), p99: pct(xs, 99) });

async function measure(kind: 'process' | 'systemd', root: string, s3: S3Server, bus?: string) {
  const targets = join(root, 'targets');
  const daemon: MounterDaemon = await start({
    endpoint: `unix://${join(root, `sock-${kind}`, 'csi.sock')}`,
    nodeId: 'bench',
    mounter: kind,
    systemdBus: bus,
    fuseBinary: 's3fs',
    s3Endpoint: s3.endpoint,
    stateDir: join(root, `state-${kind}`),
    mountTimeoutMs: 30_000,
    env: {
      PATH: process.env.PATH,
      AWS_ACCESS_KEY_ID: S3RVER_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_KEYS.secretAccessKey,
    },
    logLevel: 'silent',
  });
  const csi = new CsiClient(daemon.socketPath);
  const total: number[] = [];
  const fuse: number[] = [];
  const ours: number[] = [];
  const unpublish: number[] = [];
  try {
    for (let i = 0; i < iterations; i++) {
      const target = join(targets, kind, `seq-${i}`, 'mount');
      const t0 = performance.now();
      await csi.node('NodePublishVolume', publishRequest({ volumeId: `seq-${i}`, target, bucket: BUCKET }));
      const ms = performance.now() - t0;
      const daemonMs = daemon.lastPublish?.daemonMs ?? 0;
      total.push(ms);
      fuse.push(daemonMs);
      ours.push(ms - daemonMs);
      const t1 = performance.now();
      await csi.node('NodeUnpublishVolume', { volume_id: `seq-${i}`, target_path: target });
      unpublish.push(performance.now() - t1);
    }
    const conc = Array.from({ length: CONCURRENT }, (_, i) => join(targets, kind, `conc-${i}`, 'mount'));
    const t0 = performance.now();
    await Promise.all(
      conc.map((t, i) =>
        csi.node('NodePublishVolume', publishRequest({ volumeId: `conc-${i}`, target: t, bucket: BUCKET })),
      ),
    );
    const publishWallMs = performance.now() - t0;
    const t1 = performance.now();
    await Promise.all(
      conc.map((t, i) => csi.node('NodeUnpublishVolume', { volume_id: `conc-${i}`, target_path: t })),
    );
    const unpublishWallMs = performance.now() - t1;
    return {
      publishMs: stats(total),
      fuseDaemonStartMs: stats(fuse),
      ourOverheadMs: stats(ours),
      unpublishMs: stats(unpublish),
      concurrent50: {
        publishWallMs: Math.round(publishWallMs),
        publishesPerSecond: Math.round((CONCURRENT / publishWallMs) * 1000 * 10) / 10,
        unpublishWallMs: Math.round(unpublishWallMs),
      },
    };
  } finally {
    csi.close();
    await daemon.stop();
  }
}

const root = await mkdtemp(join(tmpdir(), 'storctl-bench-mounter-'));
const s3 = await S3Server.start(root, [BUCKET]);
let sandbox: SystemdSandbox | undefined;
try {
  const result: Record<string, unknown> = { iterations, fuseBinary: 's3fs', s3: 's3rver 3.7.1 on 127.0.0.1' };
  result.process = await measure('process', root, s3);
  sandbox = await SystemdSandbox.start(join(root, 'sandbox'), join(root, 'targets'));
  result.systemd = await measure('systemd', root, s3, sandbox.busAddress);
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (sandbox) await sandbox.stop();
  else await SystemdSandbox.stopDir(join(root, 'sandbox')).catch(() => {});
  await s3.stop();
  await rm(root, { recursive: true, force: true });
}
