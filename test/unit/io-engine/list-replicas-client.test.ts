import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { loadProto, lookupService } from '../../../src/lib/grpc/proto.js';
import { IoEngineClient, IoEngineError } from '../../../src/lib/io-engine/client.js';

type Answer = { replicas: string[]; next_token: string } | 'aborted';

/**
 * An IoEngine gRPC server that answers ListReplicas from a script (one answer per request, in
 * order) and records the requests: what the client sends, and how it handles ABORTED, seen on the
 * wire. The io-engine's own paging is tested in test/unit/io-engine/listing-page.test.ts and
 * test/integration/io-engine/large-listing.test.ts.
 */
async function scriptedServer(answers: Answer[]) {
  const requests: { max_entries: number; starting_token: string }[] = [];
  const server = new grpc.Server();
  const service = lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine').service;
  server.addService(service, {
    ListReplicas: (
      call: grpc.ServerUnaryCall<{ max_entries: number; starting_token: string }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      requests.push({ max_entries: call.request.max_entries, starting_token: call.request.starting_token });
      const a = answers.shift();
      if (!a || a === 'aborted') return cb({ code: grpc.status.ABORTED, details: 'the listing changed' });
      cb(null, { replicas: a.replicas.map((uuid) => ({ uuid, pool: 'p' })), next_token: a.next_token });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  return { server, requests, endpoint: `127.0.0.1:${port}` };
}

describe('IoEngineClient.listReplicas (paged)', () => {
  let stop: (() => void) | undefined;
  afterEach(() => stop?.());

  it('reads page after page with the token of the one before, and lists again after ABORTED', async () => {
    const s = await scriptedServer([
      { replicas: ['a', 'b'], next_token: '2:b' },
      'aborted', // 'b' went away between the pages
      { replicas: ['a', 'c'], next_token: '2:c' },
      { replicas: ['d'], next_token: '' },
    ]);
    const client = new IoEngineClient(s.endpoint);
    stop = () => {
      client.close();
      s.server.forceShutdown();
    };
    expect((await client.listReplicas()).map((r) => r.uuid)).toEqual(['a', 'c', 'd']);
    expect(s.requests).toEqual([
      { max_entries: 2000, starting_token: '' },
      { max_entries: 2000, starting_token: '2:b' },
      { max_entries: 2000, starting_token: '' },
      { max_entries: 2000, starting_token: '2:c' },
    ]);
  });

  it('gives up with the ABORTED after three listings that each changed under it', async () => {
    const changing = { replicas: ['a'], next_token: '1:a' };
    const s = await scriptedServer([changing, 'aborted', changing, 'aborted', changing, 'aborted', changing]);
    const client = new IoEngineClient(s.endpoint);
    stop = () => {
      client.close();
      s.server.forceShutdown();
    };
    const err = await client.listReplicas().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IoEngineError);
    expect((err as IoEngineError).code).toBe(grpc.status.ABORTED);
    expect(s.requests).toHaveLength(6);
  });
});
