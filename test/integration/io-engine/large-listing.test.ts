import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadProto, lookupService } from '../../../src/lib/grpc/proto.js';
import { type RunningEngine, startEngine } from './engines.js';

const MiB = 1024 * 1024;
/** Enough replicas that their listing is past gRPC's default 4 MB message limit (~236 B each). */
const REPLICAS = 20_000;
const BATCH = 256;

type ListReplicasFn = {
  ListReplicas(req: object, cb: (e: grpc.ServiceError | null) => void): void;
};

describe('io-engine listing of a node holding many replicas', () => {
  let dir: string;
  let engine: RunningEngine;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-ioe-many-'));
    engine = await startEngine(dir, 'node-a');
    await engine.client.createPool({ name: 'p', capacity: 64 * 1024 * MiB });
  });

  afterAll(async () => {
    await engine?.stop('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  it('lists every replica in one answer larger than 4 MB (core polls nodes this way)', async () => {
    for (let i = 0; i < REPLICAS; i += BATCH) {
      const items = Array.from({ length: Math.min(BATCH, REPLICAS - i) }, () => ({
        uuid: randomUUID(),
        pool: 'p',
        size: MiB,
        thin: true,
        name: `a-replica-name-long-enough-to-make-the-listing-large-${i}`,
      }));
      const results = await engine.client.createReplicas(items);
      expect(results.every((r) => 'uuid' in r)).toBe(true);
    }
    // A gRPC client with the default 4 MB receive limit cannot read this listing at all …
    const Ctor = lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine');
    const plain = new Ctor(engine.grpcEndpoint, grpc.credentials.createInsecure());
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      (plain as unknown as ListReplicasFn).ListReplicas({}, (e: grpc.ServiceError | null) => resolve(e)),
    );
    plain.close();
    expect(err?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err?.details).toMatch(/larger than max/);
    // … ours reads every replica.
    const listed = await engine.client.listReplicas();
    expect(listed).toHaveLength(REPLICAS);
  }, 120_000);
});
