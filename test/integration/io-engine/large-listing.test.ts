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
  ListReplicas(
    req: object,
    cb: (e: grpc.ServiceError | null, res?: { replicas: { uuid: string }[]; next_token: string }) => void,
  ): void;
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

  it('lists every replica in pages a default gRPC client can read; one answer would be past 4 MB', async () => {
    const created: string[] = [];
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
      created.push(...items.map((r) => r.uuid));
    }
    // A gRPC client with the default 4 MB receive limit cannot read the listing in one answer …
    const Ctor = lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine');
    const plain = new Ctor(
      engine.grpcEndpoint,
      grpc.credentials.createInsecure(),
    ) as unknown as ListReplicasFn & grpc.Client;
    const list = (req: object) =>
      new Promise<{
        err: grpc.ServiceError | null;
        res?: { replicas: { uuid: string }[]; next_token: string };
      }>((resolve) => plain.ListReplicas(req, (err, res) => resolve({ err, res })));
    try {
      const whole = await list({});
      expect(whole.err?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(whole.err?.details).toMatch(/larger than max/);
      // … but reads it in pages, every replica once.
      const paged: string[] = [];
      let token = '';
      do {
        const { err, res } = await list({ max_entries: 5000, starting_token: token });
        expect(err).toBeNull();
        expect(res!.replicas.length).toBeLessThanOrEqual(5000);
        paged.push(...res!.replicas.map((r) => r.uuid));
        token = res!.next_token;
      } while (token);
      expect(paged.sort()).toEqual([...created].sort());
    } finally {
      plain.close();
    }
    // Ours (what core polls with) reads them all.
    const listed = await engine.client.listReplicas();
    expect(listed.map((r) => r.uuid).sort()).toEqual([...created].sort());
  }, 120_000);

  it('answers ABORTED when the replica a page ended on is destroyed; our client lists again', async () => {
    const first = await engine.client.listReplicas();
    const Ctor = lookupService(loadProto('io_engine.proto'), 'storctl.io_engine.v1.IoEngine');
    const plain = new Ctor(
      engine.grpcEndpoint,
      grpc.credentials.createInsecure(),
    ) as unknown as ListReplicasFn & grpc.Client;
    try {
      const page = await new Promise<{ replicas: { uuid: string }[]; next_token: string }>(
        (resolve, reject) =>
          plain.ListReplicas({ max_entries: 3 }, (err, res) => (err ? reject(err) : resolve(res!))),
      );
      await engine.client.destroyReplica(page.replicas[2].uuid);
      const err = await new Promise<grpc.ServiceError | null>((resolve) =>
        plain.ListReplicas({ max_entries: 3, starting_token: page.next_token }, (e) => resolve(e)),
      );
      expect(err?.code).toBe(grpc.status.ABORTED);
      const gone = page.replicas[2].uuid;
      expect((await engine.client.listReplicas()).map((r) => r.uuid).sort()).toEqual(
        first
          .map((r) => r.uuid)
          .filter((u) => u !== gone)
          .sort(),
      );
    } finally {
      plain.close();
    }
  }, 60_000);
});
