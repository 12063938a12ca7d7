/**
 * NodePublishVolume latency of the S3 mounter, per mounter (process, systemd), next to its peer
 * measured in the same run: a bare `s3fs` mount of the same bucket with the same options and
 * credentials, started by hand as an operator would (spawn until the mount is in the mount table
 * and its root answers stat, polled as the mounter polls). Bare mounts and publishes alternate, one
 * of each per iteration, so both see the same machine; ratios are publish ÷ bare s3fs. Also 50
 * concurrent publishes next to 50 concurrent bare s3fs mounts. Real s3fs against s3rver on
 * 127.0.0.1; the systemd mounter runs against the test sandbox's systemd. Needs root and /dev/fuse.
 *   npx tsx bench/mounter.ts [--iterations 30]
 * Prints one JSON object.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
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
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Mount points in this process's mount table (field 5 of /proc/self/mountinfo, octal escapes kept). */
async function mountPoints(): Promise<Set<string>> {
  const text = await readFile('/proc/self/mountinfo', 'utf8');
  return new Set(text.split('\n').map((l) => l.split(' ')[4]));
}

/**
 * The peer: `s3fs BUCKET TARGET -f` with the options the mounter gives it (endpoint, path-style
 * requests, a passwd file, a log file), timed from spawn until TARGET is in the mount table and
 * stat of it answers — polled every 5 ms, as the mounter polls its first 50 times.
 */
async function bareS3fsMount(s3: S3Server, passwd: string, target: string) {
  await mkdir(target, { recursive: true });
  const t0 = performance.now();
  const child = spawn(
    's3fs',
    [
      BUCKET,
      target,
      '-f',
      '-o',
      `logfile=${target}.log`,
      '-o',
      `url=${s3.endpoint}`,
      '-o',
      'use_path_request_style',
      '-o',
      `passwd_file=${passwd}`,
    ],
    { stdio: 'ignore' },
  );
  const exited = once(child, 'exit');
  for (;;) {
    if (child.exitCode !== null)
      throw new Error(`bare s3fs exited ${child.exitCode} without mounting ${target}`);
    if (
      (await mountPoints()).has(target) &&
      (await stat(target).then(
        () => true,
        () => false,
      ))
    )
      break;
    if (performance.now() - t0 > 30_000) throw new Error(`bare s3fs did not mount ${target} within 30 s`);
    await sleep(5);
  }
  const mountMs = performance.now() - t0;
  return {
    mountMs,
    /** fusermount3 -u, then wait for s3fs to exit; the unmount time. */
    async unmount(): Promise<number> {
      const t1 = performance.now();
      const u = spawn('fusermount3', ['-u', target], { stdio: 'ignore' });
      const [code] = (await once(u, 'exit')) as [number | null];
      if (code !== 0) throw new Error(`fusermount3 -u ${target} exited ${code}`);
      await exited;
      return performance.now() - t1;
    },
  };
}

async function measure(
  kind: 'process' | 'systemd',
  root: string,
  s3: S3Server,
  passwd: string,
  bus?: string,
) {
  const targets = join(root, 'targets');
  const bareDir = join(root, 'bare', kind);
  const daemon: MounterDaemon = await start({
    endpoint: `unix://${join(root, `sock-${kind}`, 'csi.sock')}`,
    nodeId: 'bench',
    mounter: kind,
    systemdBus: bus,
    fuseBinary: 's3fs',
    s3Endpoint: s3.endpoint,
    stateDir: join(root, `state-${kind}`),
    roots: [root],
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
  const selfReported: number[] = [];
  const unpublish: number[] = [];
  const bare: number[] = [];
  const bareUnmount: number[] = [];
  try {
    for (let i = 0; i < iterations; i++) {
      // The peer first, then ours: alternating, one of each per iteration.
      const peer = await bareS3fsMount(s3, passwd, join(bareDir, `seq-${i}`));
      bare.push(peer.mountMs);
      bareUnmount.push(await peer.unmount());

      const target = join(targets, kind, `seq-${i}`, 'mount');
      daemon.lastPublish = undefined;
      const t0 = performance.now();
      await csi.node('NodePublishVolume', publishRequest({ volumeId: `seq-${i}`, target, bucket: BUCKET }));
      const ms = performance.now() - t0;
      const reported = daemon.lastPublish as { daemonMs: number; reused: boolean } | undefined;
      if (!reported || reported.reused) throw new Error(`publish ${i} did not start a FUSE daemon`);
      total.push(ms);
      selfReported.push(reported.daemonMs);
      const t1 = performance.now();
      await csi.node('NodeUnpublishVolume', { volume_id: `seq-${i}`, target_path: target });
      unpublish.push(performance.now() - t1);
    }
    // 50 bare s3fs mounts at once, then 50 publishes at once.
    const b0 = performance.now();
    const peers = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, i) => bareS3fsMount(s3, passwd, join(bareDir, `conc-${i}`))),
    );
    const bareWallMs = performance.now() - b0;
    await Promise.all(peers.map((p) => p.unmount()));
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
    const publish = stats(total);
    const peer = stats(bare);
    const unpub = stats(unpublish);
    const peerUnmount = stats(bareUnmount);
    const publishesPerSecond = Math.round((CONCURRENT / publishWallMs) * 1000 * 10) / 10;
    const bareMountsPerSecond = Math.round((CONCURRENT / bareWallMs) * 1000 * 10) / 10;
    return {
      publishMs: publish,
      peer_bare_s3fs_mount_ms: peer,
      publish_vs_bare_s3fs: { p50: ratio(publish.p50, peer.p50), p99: ratio(publish.p99, peer.p99) },
      our_overhead_over_bare_s3fs_ms: { p50: Math.round((publish.p50 - peer.p50) * 10) / 10 },
      // What the mounter measures about its own FUSE daemon start (unit start or spawn until the
      // mount answers): a breakdown of publishMs, not a peer.
      daemon_start_ms_self_reported: stats(selfReported),
      unpublishMs: unpub,
      peer_bare_s3fs_unmount_ms: peerUnmount,
      unpublish_vs_bare_s3fs: {
        p50: ratio(unpub.p50, peerUnmount.p50),
        p99: ratio(unpub.p99, peerUnmount.p99),
      },
      concurrent50: {
        publishWallMs: Math.round(publishWallMs),
        publishesPerSecond,
        peer_bare_s3fs_wall_ms: Math.round(bareWallMs),
        peer_bare_s3fs_mounts_per_second: bareMountsPerSecond,
        publishes_vs_bare_s3fs_rate: ratio(publishesPerSecond, bareMountsPerSecond),
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
  const result: Record<string, unknown> = {
    command: `npx tsx bench/mounter.ts --iterations ${iterations}`,
    iterations,
    fuseBinary: 's3fs',
    s3: 's3rver 3.7.1 on 127.0.0.1',
    peer: 'bare s3fs of the same bucket, same options and credentials, alternating with the publishes',
  };
  const passwd = join(root, 'bare.passwd-s3fs');
  await writeFile(passwd, `${S3RVER_KEYS.accessKeyId}:${S3RVER_KEYS.secretAccessKey}\n`, { mode: 0o600 });
  result.process = await measure('process', root, s3, passwd);
  sandbox = await SystemdSandbox.start(join(root, 'sandbox'), join(root, 'targets'));
  result.systemd = await measure('systemd', root, s3, passwd, sandbox.busAddress);
  console.log(JSON.stringify(result, null, 2));
} finally {
  if (sandbox) await sandbox.stop();
  else await SystemdSandbox.stopDir(join(root, 'sandbox')).catch(() => {});
  await s3.stop();
  await rm(root, { recursive: true, force: true });
}
