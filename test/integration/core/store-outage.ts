import { request } from 'node:http';
import Database from 'better-sqlite3';
import type { Backend, TestCluster } from './cluster.js';

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
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : null }));
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
