import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { objectKey } from '../src/lib/store/keys.js';
import type { Store, TxnOp } from '../src/lib/store/types.js';

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));

/** A VolumeSpec as Mayastor stores it, published on one of three nodes (a u64 reservation key included). */
export function volumeValue(uuid: string, i: number): string {
  const nexus = randomUUID();
  return `{"uuid":"${uuid}","size":${(1 + (i % 64)) * 1073741824},"labels":null,"num_replicas":3,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":{"node":null,"pool":{"Labelled":{"exclusion":{},"inclusion":{"openebs.io/created-by":"operator-diskpool"}}}},"last_nexus_id":"${nexus}","operation":null,"thin":${i % 2 === 0},"target":{"node":"node-${1 + (i % 3)}","nexus":"${nexus}","protocol":"nbd","active":true,"config":{"controllerIdRange":{"start":1,"end":2},"reservationKey":10075049441338057178,"reservationType":"ExclusiveAccess","preemptPolicy":"Holder"},"frontend":{"host_acl":[]}},"publish_context":null,"affinity_group":null}`;
}

/** Write `count` VolumeSpecs under the key space, 100 per transaction, 16 transactions in flight. */
export async function seedVolumes(
  store: Store,
  space: { clusterId: string; namespace: string },
  count: number,
) {
  const batches: TxnOp[][] = [];
  for (let i = 0; i < count; i += 100) {
    const ops: TxnOp[] = [];
    for (let j = i; j < Math.min(count, i + 100); j++) {
      const uuid = randomUUID();
      ops.push({ type: 'put', key: objectKey(space, 'VolumeSpec', uuid), value: volumeValue(uuid, j) });
    }
    batches.push(ops);
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < batches.length) await store.txn({ compare: [], success: batches[next++] });
    }),
  );
}

/**
 * `storctl get volumes -o json` as a user runs it (the built CLI, output read through a pipe):
 * wall time, peak RSS (GNU time's %M) and how much JSON came out.
 */
export async function timeGetVolumes(storeUrl: string, clusterId: string) {
  const child = spawn(
    '/usr/bin/time',
    [
      '-f',
      '%e %M',
      process.execPath,
      BIN,
      'get',
      'volumes',
      '-o',
      'json',
      '--store',
      storeUrl,
      '--cluster-id',
      clusterId,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let bytes = 0;
  let stderr = '';
  const started = process.hrtime.bigint();
  child.stdout.on('data', (d: Buffer) => {
    bytes += d.length;
  });
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
  if (code !== 0) throw new Error(`get volumes exited ${code}: ${stderr}`);
  const [, rssKb] = stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return {
    wall_ms: Math.round(wallMs),
    peak_rss_mb: Math.round(rssKb / 1024),
    output_mb: Math.round(bytes / 1e5) / 10,
  };
}
