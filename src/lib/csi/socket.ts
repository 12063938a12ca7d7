import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as grpc from '@grpc/grpc-js';

/** `unix:///abs/path.sock` (or `unix:/abs/path.sock`) → the socket path; anything else throws. */
export function socketPathOf(endpoint: string): string {
  const m = /^unix:\/\/(\/.+)$/.exec(endpoint) ?? /^unix:(\/.+)$/.exec(endpoint);
  if (!m) throw new Error(`--endpoint must be unix:///absolute/path.sock, got '${endpoint}'`);
  return m[1];
}

/**
 * Bind a gRPC server on a unix socket that only its owner may use: a socket directory we create is
 * ours alone (0700); an existing one (a kubelet plugin dir, or /tmp) keeps its mode; the socket
 * itself is 0600. A stale socket file from an earlier run is replaced.
 */
export async function bindUnixSocket(server: grpc.Server, socketPath: string): Promise<void> {
  const created = await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  if (created) await chmod(dirname(socketPath), 0o700);
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${socketPath}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
  await chmod(socketPath, 0o600);
}
