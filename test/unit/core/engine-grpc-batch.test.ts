import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { GrpcEngine } from '../../../src/daemons/core/engine-grpc.js';
import { loadProto, lookupService } from '../../../src/lib/grpc/proto.js';

// biome-ignore lint/suspicious/noExplicitAny: proto-loader request objects
type Req = Record<string, any>;

/**
 * A gRPC server speaking the io-engine proto with only the handlers given: an io-engine of an
 * older version (no CreateReplicas) answers UNIMPLEMENTED for the rest, as grpc-js does.
 */
async function engineServer(handlers: grpc.UntypedServiceImplementation) {
  const service = lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine').service;
  const server = new grpc.Server();
  server.addService(service, handlers);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, endpoint: `127.0.0.1:${port}` };
}

const replicaOf = (r: Req) => ({
  uuid: r.uuid,
  name: r.name,
  pool: r.pool,
  size: r.size,
  thin: r.thin,
  share: 'none',
});

describe('core → io-engine replica creates', () => {
  let server: grpc.Server | undefined;
  afterEach(() => server?.forceShutdown());

  it('sends concurrent creates for one node as one CreateReplicas call; item errors stay per item', async () => {
    const calls: string[][] = [];
    const s = await engineServer({
      CreateReplicas: (call: grpc.ServerUnaryCall<Req, Req>, cb: grpc.sendUnaryData<Req>) => {
        calls.push(call.request.replicas.map((r: Req) => r.uuid));
        cb(null, {
          results: call.request.replicas.map((r: Req) =>
            r.pool === 'full'
              ? {
                  error: {
                    code: grpc.status.RESOURCE_EXHAUSTED,
                    message: `pool 'full' has no space for ${r.uuid}`,
                  },
                }
              : { replica: replicaOf(r) },
          ),
        });
      },
    });
    server = s.server;
    const engine = new GrpcEngine('node-x', s.endpoint, 5000);
    const results = await Promise.allSettled(
      ['a', 'b', 'c'].map((uuid) =>
        engine.createReplica({ uuid, pool: uuid === 'b' ? 'full' : 'p', size: 4096, thin: true }),
      ),
    );
    expect(calls).toEqual([['a', 'b', 'c']]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[0] as PromiseFulfilledResult<{ uuid: string }>).value.uuid).toBe('a');
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({
      code: grpc.status.RESOURCE_EXHAUSTED,
      message: "io-engine node-x: pool 'full' has no space for b",
    });
  });

  it('falls back to one CreateReplica per create when the io-engine has no CreateReplicas', async () => {
    const single: string[] = [];
    const s = await engineServer({
      CreateReplica: (call: grpc.ServerUnaryCall<Req, Req>, cb: grpc.sendUnaryData<Req>) => {
        single.push(call.request.uuid);
        cb(null, replicaOf(call.request));
      },
    });
    server = s.server;
    const engine = new GrpcEngine('node-old', s.endpoint, 5000);
    for (const round of [
      ['a', 'b'],
      ['c', 'd'],
    ]) {
      const created = await Promise.all(
        round.map((uuid) => engine.createReplica({ uuid, pool: 'p', size: 4096, thin: true })),
      );
      expect(created.map((r) => r.uuid)).toEqual(round);
    }
    expect(single.sort()).toEqual(['a', 'b', 'c', 'd']);
  });
});
