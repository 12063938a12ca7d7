import * as grpc from '@grpc/grpc-js';

/**
 * Bind a plain (insecure) gRPC server to `host:port` (port 0: a free one; an IPv6 host bracketed)
 * and resolve with the `host:port` it listens on.
 */
export function bindTcp(server: grpc.Server, address: { host: string; port: number }): Promise<string> {
  const { host, port } = address;
  return new Promise((resolve, reject) =>
    server.bindAsync(
      `${host.includes(':') ? `[${host}]` : host}:${port}`,
      grpc.ServerCredentials.createInsecure(),
      (err, bound) => (err ? reject(err) : resolve(`${host}:${bound}`)),
    ),
  );
}
