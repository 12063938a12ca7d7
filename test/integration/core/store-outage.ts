import { request } from 'node:http';
import Database from 'better-sqlite3';
import { objectKey } from '../../../src/lib/store/keys.js';
import type { Store } from '../../../src/lib/store/types.js';
import { checkResponse } from '../../helpers/openapi-validate.js';
import { waitFor } from '../../helpers/wait.js';
import { type Backend, FAST_CORE_FLAGS, type TestCluster } from './cluster.js';

/**
 * A raw REST call: status and the JSON body exactly as core answers. One connection per call: while
 * the store is out core answers slowly, and a reused keep-alive connection may be closed under it.
 */
export function call(base: string, method: string, path: string, body?: unknown) {
  // biome-ignore lint/suspicious/noExplicitAny: a REST body the test reads field by field
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = request(
      `${base}/v0${path}`,
      { method, agent: false, headers: body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => {
          text += d;
        });
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const parsed = text ? JSON.parse(text) : undefined;
          try {
            checkResponse({ method, path: `/v0${path}`, status, body: parsed });
          } catch (err) {
            reject(err);
            return;
          }
          resolve({ status, body: parsed ?? null });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

/** A real store outage: writes (and for etcd, every call) fail until it ends. */
export interface Outage {
  begin(): void;
  end(): void;
}

/**
 * embedded: another process holds the SQLite write lock longer than core's busy timeout;
 * etcd: the etcd server is paused (SIGSTOP), so core's calls run into their deadline.
 */
export function storeOutage(c: TestCluster, backend: Backend): Outage {
  if (backend === 'etcd') {
    const pid = c.etcd!.pid;
    return { begin: () => process.kill(pid, 'SIGSTOP'), end: () => process.kill(pid, 'SIGCONT') };
  }
  let db: Database.Database | undefined;
  return {
    begin: () => {
      db = new Database(c.storeUrl.replace(/^sqlite:/, ''), { timeout: 10_000 });
      db.exec('BEGIN IMMEDIATE');
    },
    end: () => {
      if (db?.inTransaction) db.exec('ROLLBACK');
      db?.close();
      db = undefined;
    },
  };
}

/** A lease far longer than a store outage: core must keep its lease through it. */
export const OUTAGE_CORE_FLAGS = FAST_CORE_FLAGS.map((f, i, a) => (a[i - 1] === '--lease-ttl' ? '120' : f));

/**
 * Scale volume `id` (1 replica on `holder`) to 2 so that a store outage begins exactly between the
 * stored intent and the commit: the io-engine that makes the new replica is paused until the intent
 * (operation SetReplica and the new replica's spec) is stored, the outage begins, then it goes on
 * and creates the replica, but neither commit nor rollback can be written. `scale` is the REST answer.
 */
export async function scaleIntoOutage(
  c: TestCluster,
  backend: Backend,
  store: Store,
  id: string,
  holder: string,
): Promise<{ outage: Outage; scale: ReturnType<typeof call> }> {
  const space = { clusterId: c.clusterId, namespace: 'default' };
  const volumeKey = objectKey(space, 'VolumeSpec', id);
  const spare = c.engines.find((e) => e.node !== holder)!;
  spare.proc.child.kill('SIGSTOP');
  const scale = call(c.restUrl, 'PUT', `/volumes/${id}/replica_count/2`);
  await waitFor(
    async () => {
      const v = JSON.parse((await store.get(volumeKey))!.value);
      const { kvs } = await store.range(objectKey(space, 'ReplicaSpec', ''));
      return v.operation?.operation?.SetReplica === 2 && kvs.length === 2;
    },
    { what: 'scale intent stored', timeoutMs: 10_000 },
  );
  const outage = storeOutage(c, backend);
  outage.begin();
  spare.proc.child.kill('SIGCONT');
  return { outage, scale };
}
