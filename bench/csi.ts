/**
 * CSI controller benchmark. Prints JSON. Run after `npm run build`:
 *   npx tsx bench/csi.ts [round-trips-per-batch] [batches]
 * Defaults: 100 round trips per batch, 8 batches per path and width (short batches, alternating, so
 * the load of a shared machine falls on both paths alike).
 *
 * One round trip = create a volume (thin, 1 replica, 4 MiB) and delete it again. Measured at 1 and
 * 32 in flight, through the CSI socket (CreateVolume + DeleteVolume on `storctl daemon
 * csi-controller`) and through core's REST API directly (PUT + DELETE /v0/volumes/{id}) on the
 * same cluster in the same run, batches alternating REST / CSI so drift hits both alike. Both paths
 * create the same volume: the REST body carries the request-digest label the controller puts on a
 * CSI-made volume (read back from a volume made through CSI before measuring, and the two specs
 * compared), so core does the same work for each; only the CSI hop differs. The rate
 * compared is the median over adjacent REST/CSI batch pairs of their rate ratio (each pair sees the
 * same machine; the order within a pair alternates); p50/p99 are over every round trip of a path
 * and width. At 1 in flight the batches are a quarter as long and twice as many.
 * Bar: CSI rate ≥ 0.8 × REST rate at each width. Also printed: CPU milliseconds per round trip of
 * core, the io-engines, the csi-controller and this process, per path (from /proc), which shows
 * where the CSI path's extra cost goes.
 *
 * A third path in the same batches, `grpc_floor`, sends the same CSI calls to a server that
 * answers at once (bench/grpc-floor.ts): the CSI hop's transport with no work behind it. A CSI round
 * trip costs at least a REST one plus a floor one, so `csi_over_rest_ceiling` =
 * floor / (rest + floor) (rates, per batch) is the most a CSI controller with this client could
 * reach here, if the hop cost as little as it does back to back.
 *
 * It does not at 1 in flight: there every process of the chain sleeps while the next one works, and
 * waking one is not free. So at 1 in flight a fourth path, `grpc_floor_held`, sends the same calls
 * to a floor server that holds each answer for as long as core takes to answer a REST call (a timer;
 * bench/grpc-floor.ts), as the controller waits for core. Its wall time minus the time held is the
 * hop's cost between sleeping processes, and `csi_over_rest_ceiling_held` = rest / (rest + that
 * cost) (round trip times, per batch pair) is what a controller that did no work of its own would
 * reach at 1 in flight.
 *
 * Core runs with its default periods, as users run it (not the tests' 300 ms polling), and both
 * paths are warmed with WARM_UP round trips first: V8 keeps optimizing the controller's code for
 * over a thousand calls (its CPU per round trip at 32 in flight fell from 1.16 ms after a 50-call
 * warm-up to 0.65 ms after 2000), and a controller serves for days.
 */

import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CreateVolumeRequest, Volume } from '../src/lib/rest/types.js';
import { CsiClient } from '../test/helpers/csi-client.js';
import { TestCluster } from '../test/integration/core/cluster.js';
import { createRequest, startController } from '../test/integration/csi-controller/controller-process.js';
import { type GrpcFloor, startGrpcFloor } from './grpc-floor.js';
import { quantile } from './stats.js';

const perBatch = Number(process.argv[2] ?? 100);
const batches = Number(process.argv[3] ?? 8);
const WIDTHS = [1, 32];
const SIZE = 4 * 1024 * 1024;
const BAR = 0.8;
const WARM_UP = 2000;

const round1 = (x: number) => Math.round(x * 10) / 10;
const round2 = (x: number) => Math.round(x * 100) / 100;

/** CPU milliseconds (user + system) a process has used so far, from /proc. */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
}

const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function pool(n: number, width: number, fn: () => Promise<void>): Promise<number[]> {
  const ms: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next++ < n) {
        const t0 = performance.now();
        await fn();
        ms.push(performance.now() - t0);
      }
    }),
  );
  return ms;
}

/** The fields of a volume's spec a create request decides (all but its id and progress). */
const requestedSpec = (v: Volume) => {
  const { uuid, status, operation, ...rest } = v.spec;
  return JSON.stringify(Object.entries(rest).sort(([a], [b]) => a.localeCompare(b)));
};

/**
 * The REST body that makes the volume CSI CreateVolume makes from `req`: its labels are the ones the
 * controller put on a volume made through CSI (the request digest, the same for every request
 * here). Fails unless the two volumes' specs are the same. Also gives the controller's CreateVolume
 * reply, which the floor server answers with.
 */
async function restBodyLikeCsi(
  csi: CsiClient,
  cluster: TestCluster,
  req: ReturnType<typeof createRequest>,
): Promise<{ body: CreateVolumeRequest; csiReply: unknown }> {
  const csiReply = await csi.controller<{ volume: { volume_id: string } }>('CreateVolume', req);
  const { volume } = csiReply;
  const viaCsi = await cluster.rest.getVolume(volume.volume_id);
  await csi.controller('DeleteVolume', { volume_id: volume.volume_id });
  const body = {
    size: SIZE,
    replicas: 1,
    thin: true,
    policy: { self_heal: true },
    labels: viaCsi.spec.labels,
  };
  const id = randomUUID();
  const viaRest = await cluster.rest.createVolume(id, body);
  await cluster.rest.deleteVolume(id);
  if (requestedSpec(viaRest) !== requestedSpec(viaCsi))
    throw new Error(
      `the REST body makes another volume than CSI CreateVolume: ${requestedSpec(viaRest)} vs ${requestedSpec(viaCsi)}`,
    );
  return { body, csiReply };
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-bench-csi-'));
  // Core with its default periods: a user's core polls its io-engines every 30 s, not every 300 ms.
  const cluster = await TestCluster.start({ poolCapacity: 64 * 1024 * 1024 * 1024, coreFlags: [] });
  const { proc, socket } = await startController(dir, cluster.restUrl, {
    ...cluster.env,
    STORCTL_LOG_LEVEL: 'warn',
    // PROF=1: the controller writes a V8 CPU profile into the bench's temp dir (kept, and named below).
    ...(process.env.PROF ? { STORCTL_NODE_ARGS: `--cpu-prof --cpu-prof-dir=${join(dir, 'profile')}` } : {}),
  });
  // The client as a CO's would be set up for a local socket: no channelz bookkeeping, no retry
  // buffering (CSI sidecars retry whole operations themselves). Everything runs on this machine,
  // so the client's CPU is part of what the CSI path costs here.
  const clientOptions = { 'grpc.enable_channelz': 0, 'grpc.enable_retries': 0 };
  const csi = new CsiClient(socket, clientOptions);
  const floors: GrpcFloor[] = [];
  const floorClients: CsiClient[] = [];
  try {
    const csiRequest = () =>
      createRequest(`pvc-${randomUUID()}`, { required: SIZE, parameters: { repl: '1', thin: 'true' } });
    // Both paths make the same volume: core does the same work for each, only the CSI hop differs.
    const { body: restBody, csiReply } = await restBodyLikeCsi(csi, cluster, csiRequest());
    const floorSocket = join(dir, 'floor', 'controller.sock');
    const floorServer = await startGrpcFloor(floorSocket, csiReply);
    floors.push(floorServer);
    const floor = new CsiClient(floorSocket, clientOptions);
    floorClients.push(floor);
    const viaRest = async () => {
      const id = randomUUID();
      await cluster.rest.createVolume(id, restBody);
      await cluster.rest.deleteVolume(id);
    };
    const viaCsi = async () => {
      const { volume } = await csi.controller<{ volume: { volume_id: string } }>(
        'CreateVolume',
        csiRequest(),
      );
      await csi.controller('DeleteVolume', { volume_id: volume.volume_id });
    };
    const viaFloorOf = (client: CsiClient) => async () => {
      const { volume } = await client.controller<{ volume: { volume_id: string } }>(
        'CreateVolume',
        csiRequest(),
      );
      await client.controller('DeleteVolume', { volume_id: volume.volume_id });
    };
    const viaFloor = viaFloorOf(floor);
    // Warm-up: connections, JIT (see the head comment), the store's first pages.
    await pool(WARM_UP, 8, viaRest);
    await pool(WARM_UP, 8, viaCsi);
    await pool(WARM_UP, 8, viaFloor);
    // The held floor answers each call after as long as core takes to answer one REST call alone
    // (half a round trip), so its processes sleep between calls as the CSI path's do.
    const holdMs = Math.max(1, Math.round(quantile(await pool(200, 1, viaRest), 0.5) / 2));
    const heldSocket = join(dir, 'floor-held', 'controller.sock');
    const heldServer = await startGrpcFloor(heldSocket, csiReply, holdMs);
    floors.push(heldServer);
    const held = new CsiClient(heldSocket, clientOptions);
    floorClients.push(held);
    const viaHeldFloor = viaFloorOf(held);
    await pool(WARM_UP / 4, 8, viaHeldFloor);

    const results: Record<string, unknown> = {};
    let pass = true;
    for (const width of WIDTHS) {
      const fresh = () => ({
        rates: [] as number[],
        ms: [] as number[],
        cpu: { core: 0, io_engines: 0, csi_controller: 0, floor_server: 0, client: 0 },
      });
      const runs = { rest: fresh(), csi: fresh(), grpc_floor: fresh(), grpc_floor_held: fresh() };
      /** Per held batch: the round trips' wall time minus the time the server held them, per round trip. */
      const heldHopMs: number[] = [];
      const cpuNow = () => ({
        core: cpuMs(cluster.cores[0].pid),
        io_engines: cluster.engines.reduce((a, e) => a + cpuMs(e.proc.pid), 0),
        csi_controller: cpuMs(proc.pid),
        floor_server: floors.reduce((a, f) => a + cpuMs(f.child.pid!), 0),
        client: selfCpuMs(),
      });
      // At 1 in flight a round trip takes tens of ms: shorter batches, twice as many, so each REST
      // batch and the CSI batch next to it see the same machine.
      const size = width === 1 ? Math.max(10, Math.round(perBatch / 4)) : perBatch;
      const count = width === 1 ? batches * 2 : batches;
      for (let b = 0; b < count; b++) {
        // The order alternates too: neither path always runs right after the other's load.
        // Holds overlap when calls do, so the held floor only measures one call at a time.
        const order = [
          ['rest', viaRest],
          ['csi', viaCsi],
          ['grpc_floor', viaFloor],
          ...(width === 1 ? ([['grpc_floor_held', viaHeldFloor]] as const) : []),
        ] as const;
        for (const [path, fn] of b % 2 ? [...order].reverse() : order) {
          const c0 = cpuNow();
          const t0 = performance.now();
          const ms = await pool(size, width, fn);
          const wall = performance.now() - t0;
          runs[path].rates.push(size / (wall / 1000));
          runs[path].ms.push(...ms);
          if (path === 'grpc_floor_held') heldHopMs.push((wall - (await heldServer.takeHeldMs())) / size);
          const c1 = cpuNow();
          for (const k of Object.keys(c0) as (keyof typeof c0)[]) runs[path].cpu[k] += c1[k] - c0[k];
        }
      }
      const summary = (r: ReturnType<typeof fresh>) => ({
        round_trips_per_s: round1(quantile(r.rates, 0.5)),
        batch_rates: r.rates.map(round1),
        p50_ms: round1(quantile(r.ms, 0.5)),
        p99_ms: round1(quantile(r.ms, 0.99)),
        cpu_ms_per_round_trip: Object.fromEntries(
          Object.entries(r.cpu).map(([k, v]) => [k, Math.round((v / r.ms.length) * 100) / 100]),
        ),
      });
      const rest = summary(runs.rest);
      const viaCsiSummary = summary(runs.csi);
      // The ratio is the median over adjacent batch pairs: load swings on a shared machine move both
      // batches of a pair alike, while a ratio of medians would mix batches minutes apart.
      const pairs = runs.csi.rates.map((r, i) => r / runs.rest.rates[i]);
      const ratio = quantile(pairs, 0.5);
      const ceilings = runs.grpc_floor.rates.map((f, i) => f / (runs.rest.rates[i] + f));
      // REST round trip / (REST round trip + the held hop's cost), per batch pair.
      const heldCeilings = heldHopMs.map(
        (hop, i) => 1000 / runs.rest.rates[i] / (1000 / runs.rest.rates[i] + hop),
      );
      pass &&= ratio >= BAR;
      results[`in_flight_${width}`] = {
        round_trips_per_batch: size,
        batches_per_path: count,
        rest,
        csi: viaCsiSummary,
        csi_over_rest: round2(ratio),
        csi_over_rest_spread: [round2(Math.min(...pairs)), round2(Math.max(...pairs))],
        met: ratio >= BAR,
        csi_over_rest_per_pair: pairs.map(round2),
        grpc_floor: summary(runs.grpc_floor),
        csi_over_rest_ceiling: round2(quantile(ceilings, 0.5)),
        ...(heldHopMs.length
          ? {
              grpc_floor_held: {
                hold_ms_per_call: holdMs,
                hop_ms_per_round_trip: round2(quantile(heldHopMs, 0.5)),
                cpu_ms_per_round_trip: summary(runs.grpc_floor_held).cpu_ms_per_round_trip,
              },
              csi_over_rest_ceiling_held: round2(quantile(heldCeilings, 0.5)),
            }
          : {}),
      };
    }
    const leftover = await cluster.rest.listVolumes();
    console.log(
      JSON.stringify(
        {
          benchmark: 'csi-controller CreateVolume+DeleteVolume round trips vs the same through core REST',
          machine: { cpus: cpus().length, node: process.version, load_average_at_end: loadavg().map(round1) },
          volume: { size_bytes: SIZE, replicas: 1, thin: true, labels: restBody.labels },
          rest_body: 'the same volume spec as CSI CreateVolume makes, its request-digest label included',
          ...results,
          bar: `csi_over_rest >= ${BAR} at every width`,
          pass,
          volumes_left: leftover.length,
        },
        null,
        2,
      ),
    );
  } finally {
    csi.close();
    for (const c of floorClients) c.close();
    for (const { child } of floors) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
    await proc.kill('SIGTERM');
    await cluster.stop();
    if (process.env.PROF) console.error(`controller CPU profile: ${join(dir, 'profile')}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
