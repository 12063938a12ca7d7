/**
 * The block CSI node's data path and attach latency, beside its peer in the same run:
 * - sequential 1 MiB writes then reads of a file on the staged ext4 (path proxy serving a FUSE file →
 *   loop → ext4, O_DIRECT through dd) next to the same I/O straight on the volume's NBD target (qemu-img
 *   bench, one request in flight); bar: at least half the direct target's rate;
 * - NodeStageVolume + NodeUnstageVolume latency (p50/p90 of N rounds; format only on the first);
 * - the read hop by hop, and the path proxy's NBD socket (what kernel NBD attaches to) beside its
 *   peer: nbdkit's nbd plugin as the same hop (a unix socket in front of the same target), in
 *   `reads` alternating pairs.
 * The reads run in `reads` alternating pairs (direct, then through the filesystem, the order
 * swapping each pair) and the bar is checked on the median of the pairs' ratios: a read of a few
 * hundred MiB takes a fraction of a second, and this shared machine's speed moves more than that
 * from one second to the next.
 * Prints JSON. Run after `npm run build`, as root:
 *   npx tsx bench/csi-node.ts [mib] [rounds] [reads]
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROXY_EXPORT } from '../src/daemons/csi-node/proxy-server.js';
import { stageRequest } from '../test/helpers/csi-client.js';
import { waitFor } from '../test/helpers/wait.js';
import { TestCluster } from '../test/integration/core/cluster.js';
import { CsiNodeFixture } from '../test/integration/csi-node/fixture.js';
import { startTool } from '../test/integration/io-engine/nbd-tools.js';
import { median, quantile } from './stats.js';

const execFileP = promisify(execFile);
const mib = Number(process.argv[2] ?? 1024);
const rounds = Number(process.argv[3] ?? 5);
const reads = Number(process.argv[4] ?? 3);
const MiB = 1 << 20;

async function qemuBench(uri: string, write: boolean): Promise<number> {
  const args = [
    'bench',
    '-f',
    'raw',
    '-q',
    '-c',
    String(mib),
    '-d',
    '1',
    '-s',
    String(MiB),
    '-S',
    String(MiB),
  ];
  if (write) args.push('-w', '--pattern=0x5a');
  const t0 = performance.now();
  await execFileP('qemu-img', [...args, uri]);
  return mib / ((performance.now() - t0) / 1000);
}

async function ddRate(args: string[]): Promise<number> {
  const t0 = performance.now();
  await execFileP('dd', [...args, 'bs=1M', `count=${mib}`, 'status=none']);
  return mib / ((performance.now() - t0) / 1000);
}

/** `n` pairs of rates of `a` and `b`, the order swapping each pair, so drift hits both alike. */
async function alternatingPairs(
  n: number,
  a: () => Promise<number>,
  b: () => Promise<number>,
): Promise<[number, number][]> {
  const pairs: [number, number][] = [];
  for (let i = 0; i < n; i++) {
    const pair: [number, number] = [0, 0];
    for (const side of i % 2 ? [1, 0] : [0, 1]) pair[side] = await (side === 0 ? a : b)();
    pairs.push(pair);
  }
  return pairs;
}
const r1 = (x: number) => Math.round(x * 10) / 10;

async function main() {
  const cluster = await TestCluster.start({ engines: 1, poolCapacity: 8 * 2 ** 30 });
  const node = new CsiNodeFixture();
  try {
    await node.start();
    const id = crypto.randomUUID();
    await cluster.rest.createVolume(id, {
      size: (mib + 256) * MiB,
      replicas: 1,
      thin: true,
      policy: { self_heal: false },
    });
    const uri = (
      await cluster.rest.publishVolume(id, { protocol: 'nbd', publish_context: {}, node: 'node-1' })
    ).state.target!.deviceUri;
    // The peer first, on the raw target (before a filesystem is on it).
    const directWrite = await qemuBench(uri, true);

    const staging = join(node.root, 'plugins', id, 'globalmount');
    const stage = () => node.csi!.node('NodeStageVolume', stageRequest({ volumeId: id, staging, uri }));
    const unstage = () =>
      node.csi!.node('NodeUnstageVolume', { volume_id: id, staging_target_path: staging });
    const t0 = performance.now();
    await stage(); // formats ext4
    const firstStageMs = performance.now() - t0;
    const file = join(staging, 'bench.bin');
    const fsWrite = await ddRate(['if=/dev/zero', `of=${file}`, 'oflag=direct', 'conv=fsync']);
    const readPairs = (
      await alternatingPairs(
        reads,
        () => qemuBench(uri, false),
        () => ddRate([`if=${file}`, 'of=/dev/null', 'iflag=direct']),
      )
    ).map(([direct, fs]) => ({ direct, fs }));
    const directRead = median(readPairs.map((p) => p.direct));
    const fsRead = median(readPairs.map((p) => p.fs));
    // The same reads hop by hop, to see which layer costs what: the proxy's NBD socket, the
    // proxy's FUSE file the loop device is bound to, the loop device.
    const staged = JSON.parse(await readFile(join(node.stateDir, 'state.json'), 'utf8')).volumes[id];
    // The proxy's peer: nbdkit's nbd plugin as the same kind of hop (unix socket in front of the
    // same target), in alternating pairs with ours.
    const peerSocket = join(node.dir, 'peer-proxy.sock');
    const peer = startTool('nbdkit', ['-f', '--unix', peerSocket, 'nbd', `uri=${uri}`]);
    let proxyPairs: { ours: number; nbdkit: number }[];
    try {
      await waitFor(
        async () =>
          (await execFileP('nbdinfo', ['--size', `nbd+unix:///?socket=${peerSocket}`]).catch(() => null))
            ?.stdout || (await peer.failIfExited()),
        { what: 'nbdkit nbd plugin serving' },
      );
      proxyPairs = (
        await alternatingPairs(
          reads,
          () => qemuBench(`nbd+unix:///${PROXY_EXPORT}?socket=${staged.proxy.socketPath}`, false),
          () => qemuBench(`nbd+unix:///?socket=${peerSocket}`, false),
        )
      ).map(([ours, nbdkit]) => ({ ours, nbdkit }));
    } finally {
      peer.kill();
    }
    const hops = {
      proxy_socket: median(proxyPairs.map((p) => p.ours)),
      fuse_file: await ddRate([`if=${staged.device.file}`, 'of=/dev/null', 'iflag=direct']),
      loop_device: await ddRate([`if=${staged.device.device}`, 'of=/dev/null', 'iflag=direct']),
    };
    const peerProxy = median(proxyPairs.map((p) => p.nbdkit));
    await unstage();
    const stageMs: number[] = [];
    const unstageMs: number[] = [];
    for (let i = 0; i < rounds; i++) {
      let t = performance.now();
      await stage();
      stageMs.push(performance.now() - t);
      t = performance.now();
      await unstage();
      unstageMs.push(performance.now() - t);
    }
    const ratioWrite = fsWrite / directWrite;
    const readRatios = readPairs.map((p) => p.fs / p.direct);
    const ratioRead = median(readRatios);
    console.log(
      JSON.stringify(
        {
          command: `npx tsx bench/csi-node.ts ${mib} ${rounds} ${reads}`,
          attacher: 'fuse-loop (the path proxy serves a FUSE file; a loop device on it)',
          sequential_1MiB_MiB_per_s: {
            direct_target: { write: r1(directWrite), read: r1(directRead) },
            through_staged_ext4: { write: r1(fsWrite), read: r1(fsRead) },
            ratio: { write: Math.round(ratioWrite * 100) / 100, read: Math.round(ratioRead * 100) / 100 },
            read_ratio_per_pair: readRatios.map((r) => Math.round(r * 100) / 100),
            read_by_hop: Object.fromEntries(Object.entries(hops).map(([k, v]) => [k, r1(v)])),
            proxy_peer: {
              nbdkit_nbd_plugin_socket: r1(peerProxy),
              ours_over_nbdkit: Math.round(median(proxyPairs.map((p) => p.ours / p.nbdkit)) * 100) / 100,
            },
          },
          stage_ms: {
            first_with_mkfs: Math.round(firstStageMs),
            p50: Math.round(quantile(stageMs, 0.5)),
            p90: Math.round(quantile(stageMs, 0.9)),
          },
          unstage_ms: {
            p50: Math.round(quantile(unstageMs, 0.5)),
            p90: Math.round(quantile(unstageMs, 0.9)),
          },
          bar: { through_fs_at_least_half_of_direct: 0.5, met: ratioWrite >= 0.5 && ratioRead >= 0.5 },
        },
        null,
        2,
      ),
    );
  } finally {
    await node.dispose();
    await cluster.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
