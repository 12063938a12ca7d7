/**
 * The gRPC transport's own cost, for bench/csi.ts: a CSI Controller server in a child process that
 * answers CreateVolume and DeleteVolume with a canned reply (the one the csi-controller gave for the
 * same request), on a unix socket, with the csi-controller's server options. A round trip against
 * it is what the CSI hop costs with no work behind it: the CO's client, the server library, the
 * kernel and the extra process, and nothing of ours.
 *
 * With a hold time, the server answers each call that many milliseconds later (a timer), as the
 * csi-controller answers once core has: both processes sleep meanwhile, and waking them is part of
 * what the hop costs. The server sums the time it actually held (a timer fires late, never early)
 * and reports the sum on request, so the hop's cost is the wall time minus the time held.
 *
 * Run as a child: `tsx bench/grpc-floor.ts SOCKET REPLY_JSON [HOLD_MS]`; it prints `listening` once bound.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { bindUnixSocket } from '../src/lib/csi/socket.js';
import { loadProto, lookupService } from '../src/lib/grpc/proto.js';

const SELF = fileURLToPath(import.meta.url);

export interface GrpcFloor {
  child: ChildProcess;
  /** Milliseconds the server held answers since the last call of this, summed. */
  takeHeldMs(): Promise<number>;
}

/** Start the floor server on `socket`; it answers every CreateVolume with `reply`, after `holdMs`. */
export async function startGrpcFloor(socket: string, reply: unknown, holdMs = 0): Promise<GrpcFloor> {
  const child = fork(SELF, [socket, JSON.stringify(reply), String(holdMs)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  await Promise.race([
    new Promise<void>((resolve) => {
      child.stdout?.on('data', () => out.includes('listening') && resolve());
    }),
    once(child, 'exit').then(([code]) => {
      throw new Error(`the gRPC floor server exited (${code}) before it listened`);
    }),
  ]);
  const takeHeldMs = async () => {
    const answer = once(child, 'message');
    child.send('held');
    const [ms] = await answer;
    return ms as number;
  };
  return { child, takeHeldMs };
}

async function serve(socket: string, reply: unknown, holdMs: number): Promise<void> {
  let heldMs = 0;
  const answer = <T>(callback: grpc.sendUnaryData<T>, value: T) => {
    if (!holdMs) return callback(null, value);
    const t0 = performance.now();
    setTimeout(() => {
      heldMs += performance.now() - t0;
      callback(null, value);
    }, holdMs);
  };
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  server.addService(lookupService(loadProto('csi.proto'), 'csi.v1.Controller').service, {
    CreateVolume: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => answer(callback, reply),
    DeleteVolume: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => answer(callback, {}),
  });
  await bindUnixSocket(server, socket);
  process.on('message', () => {
    process.send?.(heldMs);
    heldMs = 0;
  });
  process.stdout.write('listening\n');
  process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}

if (process.argv[1] === SELF) {
  serve(process.argv[2], JSON.parse(process.argv[3]), Number(process.argv[4] ?? 0)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
