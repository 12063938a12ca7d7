import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { objectKey, typePrefix } from '../src/lib/store/keys.js';
import type { Store, TxnOp } from '../src/lib/store/types.js';
import { prefixEnd } from '../src/lib/store/validate.js';

const BIN = fileURLToPath(new URL('../bin/run.js', import.meta.url));
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * A VolumeSpec as Mayastor stores it, every optional field present. Even `i`: published on one of
 * three nodes (target with a u64 reservation key, ~680 B); odd `i`: a plain, unpublished volume
 * (~420 B).
 */
export function volumeValue(uuid: string, i: number): string {
  const nexus = randomUUID();
  const published = i % 2 === 0;
  const target = published
    ? `{"node":"node-${1 + (i % 3)}","nexus":"${nexus}","protocol":"nbd","active":true,"config":{"controllerIdRange":{"start":1,"end":2},"reservationKey":10075049441338057178,"reservationType":"ExclusiveAccess","preemptPolicy":"Holder"},"frontend":{"host_acl":[]}}`
    : 'null';
  return `{"uuid":"${uuid}","size":${(1 + (i % 64)) * 1073741824},"labels":null,"num_replicas":3,"status":{"Created":"Online"},"policy":{"self_heal":true},"topology":{"node":null,"pool":{"Labelled":{"exclusion":{},"inclusion":{"openebs.io/created-by":"operator-diskpool"}}}},"last_nexus_id":${published ? `"${nexus}"` : 'null'},"operation":null,"thin":${i % 4 < 2},"target":${target},"publish_context":null,"affinity_group":null}`;
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

export interface ListingRun {
  wall_ms: number;
  peak_rss_mb: number;
  output_mb: number;
}

/**
 * One command as a user runs it (output read through a pipe): wall time, peak RSS (GNU time's %M)
 * and how much came out.
 */
export async function timeCommand(cmd: string, args: string[], cwd = ROOT): Promise<ListingRun> {
  const child = spawn('/usr/bin/time', ['-f', '%e %M', cmd, ...args], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${code}: ${stderr}`);
  const [, rssKb] = stderr.trim().split('\n').pop()!.split(' ').map(Number);
  return {
    wall_ms: Math.round(wallMs),
    peak_rss_mb: Math.round(rssKb / 1024),
    output_mb: Math.round(bytes / 1e5) / 10,
  };
}

/** `storctl get volumes -o json|table` with the built CLI. */
export function timeGetVolumes(storeUrl: string, clusterId: string, output: 'json' | 'table' = 'json') {
  return timeCommand(process.execPath, [
    BIN,
    'get',
    'volumes',
    '-o',
    output,
    '--store',
    storeUrl,
    '--cluster-id',
    clusterId,
  ]);
}

/** The etcd peer: `etcdctl get --prefix -w json` of the same keys (values base64, as etcdctl prints). */
export function timeEtcdctl(clientUrl: string, clusterId: string) {
  const prefix = typePrefix({ clusterId, namespace: 'default' }, 'VolumeSpec');
  return timeCommand('etcdctl', [`--endpoints=${clientUrl}`, 'get', '--prefix', prefix, '-w', 'json']);
}

/**
 * The embedded peer: a raw read of the same rows with the store's own driver (better-sqlite3) in a
 * bare node process, printed as `-o json` prints them (a JSON array of the stored values, one per
 * line). No store, no oclif, no validation.
 */
const RAW_READ = `
import Database from 'better-sqlite3';
const [file, from, end] = process.argv.slice(1);
const db = new Database(file, { readonly: true });
const rows = db.prepare('SELECT value FROM kv WHERE key >= ? AND key < ? ORDER BY key').pluck();
let chunk = '[';
let n = 0;
for (const v of rows.iterate(from, end)) {
  chunk += (n++ ? ',\\n' : '\\n') + v;
  if (chunk.length > 65536) { process.stdout.write(chunk); chunk = ''; }
}
process.stdout.write(chunk + (n ? '\\n]\\n' : ']\\n'));
`;

export function timeRawSqliteRead(file: string, clusterId: string) {
  const prefix = typePrefix({ clusterId, namespace: 'default' }, 'VolumeSpec');
  return timeCommand(process.execPath, [
    '--input-type=module',
    '-e',
    RAW_READ,
    file,
    prefix,
    prefixEnd(prefix),
  ]);
}
