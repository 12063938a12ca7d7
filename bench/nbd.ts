/**
 * NBD data-path benchmark: sequential 1 MiB and scattered 4 KiB reads and writes (qemu-img bench),
 * and whole-device copies in and out (nbdcopy, one connection, extents ignored so every byte is
 * moved), against a 1-child nexus, a 3-child nexus (local + 2 remote children on a second
 * io-engine), and nbdkit's file plugin and qemu-nbd serving the same kind of file, all in one run:
 * `--rounds` rounds (default 3), every round runs each test on every target back to back, in
 * reverse order every other round; the median of the rounds is reported, with its spread. Every run
 * starts with no dirty page of an earlier run left (`sync`, untimed): otherwise one target's writes
 * are flushed during the next target's run, which then pays for them. Prints JSON whose bars are
 * ratios to nbdkit's file plugin (or to the 1-child nexus) in the same run: 1-child sequential
 * read and write >= 0.8 x nbdkit, 4 KiB random >= 0.6 x, 3-child sequential write >= 0.5 x the
 * 1-child. A bar's ratio is the median over the rounds of the two targets' ratio in that round
 * (runs minutes apart see another machine; the two runs of one round, the same).
 *
 * The 3-child nexus's peer is a mirror built from the same tools: qemu-nbd serving qemu's quorum
 * driver over a local file and two nbdkit file exports (1 local + 2 remote, as the nexus), measured
 * on the write tests only (its reads and 4 KiB runs add minutes and no bar). Its ratio to qemu-nbd
 * over one file is what mirroring costs a peer on this machine, where every copy shares the same
 * two cores and disk: each copy is one more transfer over loopback TCP and one more page-cache write.
 *
 *   npm run build && npx tsx bench/nbd.ts [--size-mib 1024] [--seq-count 2048] [--rand-count 40000] [--rounds 3]
 *
 * qemu-img bench has no random mode; a step of 7919 × 4 KiB (a prime stride, taken modulo the
 * device size) scatters the 4 KiB requests across the whole device. nbdcopy writes the data of
 * nbdkit's pattern plugin (never zero, so nothing is skipped as sparse).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { IoEngineClient } from '../src/lib/io-engine/client.js';
import { withUnusedPorts } from '../test/helpers/ports.js';
import { failIfExited, waitFor } from '../test/helpers/wait.js';
import { startTool } from '../test/integration/io-engine/nbd-tools.js';
import { median } from './stats.js';

const execFileP = promisify(execFile);
const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const MiB = 1024 * 1024;

const { values: opts } = parseArgs({
  options: {
    'size-mib': { type: 'string', default: '1024' },
    'seq-count': { type: 'string', default: '2048' },
    'rand-count': { type: 'string', default: '40000' },
    depth: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
  },
});
const SIZE = Number(opts['size-mib']) * MiB;
const SEQ_COUNT = Number(opts['seq-count']);
const RAND_COUNT = Number(opts['rand-count']);
const DEPTH = Number(opts.depth);
const ROUNDS = Number(opts.rounds);

const children: ChildProcess[] = [];

async function startEngine(dir: string, node: string) {
  const proc = spawn(
    process.execPath,
    [
      BIN,
      'daemon',
      'io-engine',
      '--node',
      node,
      '--pool-dir',
      join(dir, node),
      '--grpc',
      '127.0.0.1:0',
      '--nbd',
      '127.0.0.1:0',
      '--store',
      `sqlite:${join(dir, 'store.db')}`,
      '--cluster-id',
      'bench',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  children.push(proc);
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += d;
  });
  const ready = await waitFor(
    async () => {
      const line = out.split('\n').find((l) => l.includes('"io-engine ready"'));
      return line
        ? (JSON.parse(line) as { grpcEndpoint: string })
        : await failIfExited(proc, node, () => out);
    },
    { what: `${node} ready` },
  );
  return new IoEngineClient(ready.grpcEndpoint);
}

/**
 * Start a peer NBD server on a free port below the ephemeral range (another one when it cannot bind
 * it) and wait until it serves `export`; a peer that exits fails at once with its output.
 */
function startPeer(cmd: string, args: (port: string) => string[], exportName: string): Promise<string> {
  return withUnusedPorts(1, async ([port]) => {
    const tool = startTool(cmd, args(String(port)));
    children.push(tool.child);
    const uri = `nbd://127.0.0.1:${port}/${exportName}`;
    await waitFor(
      async () =>
        (await execFileP('nbdinfo', ['--size', uri]).catch(() => null))?.stdout ||
        (await tool.failIfExited()),
      { what: `${cmd} serving ${uri}` },
    );
    return uri;
  });
}

interface Result {
  count: number;
  mibPerSec: number;
  iops: number;
  seconds: number;
}

async function bench(
  uri: string,
  mode: 'seq-read' | 'seq-write' | 'rand-read' | 'rand-write',
): Promise<Result> {
  const seq = mode.startsWith('seq');
  const size = seq ? MiB : 4096;
  const count = seq ? SEQ_COUNT : RAND_COUNT;
  const args = [
    'bench',
    '-f',
    'raw',
    '-q',
    '-c',
    String(count),
    '-d',
    String(DEPTH),
    '-s',
    String(size),
    '-S',
    String(seq ? size : 4096 * 7919),
  ];
  if (mode.endsWith('write')) args.push('-w', '--pattern=0x5a');
  args.push(uri);
  const t0 = process.hrtime.bigint();
  const { stdout } = await execFileP('qemu-img', args, { maxBuffer: 1024 * 1024 });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const m = /Run completed in ([\d.]+) seconds/.exec(stdout);
  const seconds = m ? Number(m[1]) : wall;
  return {
    count,
    seconds: Number(seconds.toFixed(3)),
    mibPerSec: Number(((count * size) / MiB / seconds).toFixed(1)),
    iops: Math.round(count / seconds),
  };
}

/** nbdcopy of the whole device, out to null: (read) or in from nbdkit's pattern plugin (write). */
async function copy(uri: string, mode: 'copy-read' | 'copy-write'): Promise<Result> {
  const common = ['--no-extents', '--connections=1'];
  const args =
    mode === 'copy-read'
      ? [...common, uri, 'null:']
      : [...common, '--', '[', 'nbdkit', '--exit-with-parent', 'pattern', `size=${SIZE}`, ']', uri];
  const t0 = process.hrtime.bigint();
  await execFileP('nbdcopy', args, { maxBuffer: 1024 * 1024 });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return {
    count: SIZE / MiB,
    seconds: Number(seconds.toFixed(3)),
    mibPerSec: Number((SIZE / MiB / seconds).toFixed(1)),
    iops: Math.round(SIZE / MiB / seconds),
  };
}

/**
 * qemu-nbd serving qemu's quorum driver (every write to every child, acknowledged once all answered)
 * over a local file and two nbdkit file exports: the 3-child nexus's shape built from peer tools.
 */
async function startQuorumPeer(dir: string): Promise<string> {
  const remotes: string[] = [];
  for (const i of [1, 2]) {
    const file = join(dir, `quorum-remote-${i}.img`);
    await fallocated(file);
    remotes.push(
      await startPeer('nbdkit', (port) => ['-f', '-p', port, '-i', '127.0.0.1', 'file', file], ''),
    );
  }
  const local = join(dir, 'quorum-local.img');
  await fallocated(local);
  const image = [
    'driver=quorum',
    'vote-threshold=1',
    'children.0.driver=raw',
    'children.0.file.driver=file',
    `children.0.file.filename=${local}`,
    ...remotes.flatMap((uri, i) => [
      `children.${i + 1}.driver=raw`,
      `children.${i + 1}.file.driver=nbd`,
      `children.${i + 1}.file.server.type=inet`,
      `children.${i + 1}.file.server.host=127.0.0.1`,
      `children.${i + 1}.file.server.port=${new URL(uri).port}`,
    ]),
  ].join(',');
  return startPeer(
    'qemu-nbd',
    (port) => [
      '-p',
      port,
      '-b',
      '127.0.0.1',
      '-x',
      'disk',
      '--persistent',
      '-e',
      '16',
      '--image-opts',
      image,
    ],
    'disk',
  );
}

async function fallocated(path: string): Promise<void> {
  await execFileP('fallocate', ['-l', String(SIZE), path]);
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'storctl-bench-'));
  try {
    const [a, b] = await Promise.all([startEngine(dir, 'bench-a'), startEngine(dir, 'bench-b')]);
    await a.createPool({ name: 'pa', capacity: 4 * SIZE });
    await b.createPool({ name: 'pb', capacity: 4 * SIZE });
    const one = await a.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE });
    const n1 = await a.createNexus({ uuid: randomUUID(), size: SIZE, children: [one.uri] });
    const target1 = (await a.publishNexus(n1.uuid)).deviceUri;
    const local = await a.createReplica({ uuid: randomUUID(), pool: 'pa', size: SIZE });
    const r1 = await b.createReplica({ uuid: randomUUID(), pool: 'pb', size: SIZE, share: 'nbd' });
    const r2 = await b.createReplica({ uuid: randomUUID(), pool: 'pb', size: SIZE, share: 'nbd' });
    const n3 = await a.createNexus({ uuid: randomUUID(), size: SIZE, children: [local.uri, r1.uri, r2.uri] });
    const target3 = (await a.publishNexus(n3.uuid)).deviceUri;

    const kitFile = join(dir, 'nbdkit.img');
    await fallocated(kitFile);
    const kitUri = await startPeer(
      'nbdkit',
      (port) => ['-f', '-p', port, '-i', '127.0.0.1', 'file', kitFile],
      '',
    );
    const qFile = join(dir, 'qemu-nbd.img');
    await fallocated(qFile);
    const qUri = await startPeer(
      'qemu-nbd',
      (port) => ['-f', 'raw', '-p', port, '-b', '127.0.0.1', '-x', 'disk', '--persistent', '-e', '16', qFile],
      'disk',
    );

    const quorumUri = await startQuorumPeer(dir);

    const targets: Record<string, string> = {
      'nexus-1-child': target1,
      'nexus-3-children': target3,
      'nbdkit-file': kitUri,
      'qemu-nbd': qUri,
      'qemu-quorum-3': quorumUri,
    };
    const modes = ['seq-write', 'seq-read', 'rand-write', 'rand-read', 'copy-write', 'copy-read'] as const;
    type Mode = (typeof modes)[number];
    const MIRROR_MODES: readonly Mode[] = ['seq-write', 'copy-write'];
    const measured = (name: string, mode: Mode) => name !== 'qemu-quorum-3' || MIRROR_MODES.includes(mode);
    const run = (uri: string, mode: Mode) =>
      mode.startsWith('copy') ? copy(uri, mode as 'copy-read' | 'copy-write') : bench(uri, mode as never);
    const seen: Record<string, Record<string, Result[]>> = {};
    for (let r = 0; r < ROUNDS; r++) {
      for (const mode of modes) {
        const order = Object.entries(targets);
        if (r % 2 === 1) order.reverse();
        for (const [name, uri] of order) {
          if (!measured(name, mode)) continue;
          seen[name] ??= {};
          await execFileP('sync');
          seen[name][mode] = [...(seen[name][mode] ?? []), await run(uri, mode)];
        }
      }
    }
    // Median MiB/s of the rounds per target and test, with its spread.
    const results: Record<string, Record<string, { mibPerSec: number; iops: number; runs: number[] }>> = {};
    for (const [name, byMode] of Object.entries(seen)) {
      results[name] = {};
      for (const [mode, runs] of Object.entries(byMode)) {
        const rates = runs.map((x) => x.mibPerSec);
        results[name][mode] = {
          mibPerSec: median(rates),
          iops: median(runs.map((x) => x.iops)),
          runs: rates,
        };
      }
    }
    // Per mode: the median over rounds of a/b within the round, and each round's.
    const round2 = (x: number) => Number(x.toFixed(2));
    const perRound = (a: string, b: string, m: Mode) =>
      seen[a][m].map((x, r) => x.mibPerSec / seen[b][m][r].mibPerSec);
    const ratios: Record<string, Record<string, number>> = {};
    const ratiosPerRound: Record<string, Record<string, number[]>> = {};
    const compare = (a: string, b: string, only: readonly Mode[] = modes) => {
      ratios[`${a}_vs_${b}`] = Object.fromEntries(only.map((m) => [m, round2(median(perRound(a, b, m)))]));
      ratiosPerRound[`${a}_vs_${b}`] = Object.fromEntries(
        only.map((m) => [m, perRound(a, b, m).map(round2)]),
      );
    };
    for (const name of ['nexus-1-child', 'nexus-3-children', 'qemu-nbd']) compare(name, 'nbdkit-file');
    compare('nexus-3-children', 'nexus-1-child');
    // The peer's own cost of mirroring, and our mirror next to it.
    compare('qemu-quorum-3', 'qemu-nbd', MIRROR_MODES);
    compare('nexus-3-children', 'qemu-quorum-3', MIRROR_MODES);
    const bars = [
      ...(['seq-read', 'seq-write', 'copy-read', 'copy-write'] as const).map((m) => ({
        bar: `nexus-1-child ${m} >= 0.8 x nbdkit-file`,
        value: ratios['nexus-1-child_vs_nbdkit-file'][m],
        met: ratios['nexus-1-child_vs_nbdkit-file'][m] >= 0.8,
      })),
      ...(['rand-read', 'rand-write'] as const).map((m) => ({
        bar: `nexus-1-child ${m} (4 KiB) >= 0.6 x nbdkit-file`,
        value: ratios['nexus-1-child_vs_nbdkit-file'][m],
        met: ratios['nexus-1-child_vs_nbdkit-file'][m] >= 0.6,
      })),
      ...MIRROR_MODES.map((m) => ({
        bar: `nexus-3-children ${m} >= 0.5 x nexus-1-child`,
        value: ratios['nexus-3-children_vs_nexus-1-child'][m],
        met: ratios['nexus-3-children_vs_nexus-1-child'][m] >= 0.5,
      })),
    ];
    process.stdout.write(
      `${JSON.stringify(
        {
          benchmark: 'nbd',
          command: `npx tsx bench/nbd.ts --size-mib ${SIZE / MiB} --seq-count ${SEQ_COUNT} --rand-count ${RAND_COUNT} --depth ${DEPTH} --rounds ${ROUNDS}`,
          tools: ['qemu-img bench', 'nbdcopy --no-extents --connections=1'],
          sizeBytes: SIZE,
          depth: DEPTH,
          rounds: ROUNDS,
          seq: { requestBytes: MiB, count: SEQ_COUNT },
          rand: { requestBytes: 4096, count: RAND_COUNT, strideBytes: 4096 * 7919 },
          unit: 'MiB/s, median of rounds (runs: every round)',
          results,
          ratios,
          ratios_per_round: ratiosPerRound,
          bars,
          all_bars_met: bars.every((b) => b.met),
        },
        null,
        2,
      )}\n`,
    );
    a.close();
    b.close();
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    await Promise.all(
      children.map((c) =>
        c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once('exit', r)) : null,
      ),
    );
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
