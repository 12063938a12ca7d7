/**
 * The gRPC transport's own cost, for bench/csi.ts: a CSI Controller server in a child process that
 * answers CreateVolume and DeleteVolume at once with a canned reply (the one the csi-controller
 * gave for the same request), on a unix socket, with the csi-controller's server options. A round
 * trip against it is what the CSI hop costs with no work behind it: the CO's client, the server
 * library, the kernel and the extra process, and nothing of ours.
 *
 * Run as a child: `tsx bench/grpc-floor.ts SOCKET REPLY_JSON`; it prints `listening` once bound.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { bindUnixSocket } from '../src/lib/csi/socket.js';
import { loadProto, lookupService } from '../src/lib/grpc/proto.js';

const SELF = fileURLToPath(import.meta.url);

/** Start the floor server on `socket`; it answers every CreateVolume with `reply`. */
export async function startGrpcFloor(socket: string, reply: unknown): Promise<ChildProcess> {
  const child = fork(SELF, [socket, JSON.stringify(reply)], {
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
  return child;
}

async function serve(socket: string, reply: unknown): Promise<void> {
  const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
  server.addService(lookupService(loadProto('csi.proto'), 'csi.v1.Controller').service, {
    CreateVolume: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, reply),
    DeleteVolume: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, {}),
  });
  await bindUnixSocket(server, socket);
  process.stdout.write('listening\n');
  process.on('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}

if (process.argv[1] === SELF) {
  serve(process.argv[2], JSON.parse(process.argv[3])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
