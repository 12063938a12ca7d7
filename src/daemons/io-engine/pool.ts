import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  constants,
  copyFile,
  mkdir,
  open,
  readFile,
  rm,
  rmdir,
  stat,
  truncate,
  unlink,
} from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { writeJsonAtomic } from './atomic-file.js';
import { alreadyExists, exhausted, invalid, notFound, precondition } from './errors.js';
import { Replica, type ReplicaMeta } from './replica.js';

const execFileP = promisify(execFile);

export const POOL_META_FILE = 'pool.json';

export interface SnapshotMeta {
  uuid: string;
  name: string;
  replicaUuid: string;
  size: number;
  createdAt: string;
  /** True when the snapshot shares blocks with its source (reflink), false for a full sparse copy. */
  reflink: boolean;
}

interface PoolMeta {
  version: 1;
  name: string;
  uuid: string;
  capacity: number;
  createdAt: string;
  replicas: Record<string, ReplicaMeta>;
  snapshots: Record<string, SnapshotMeta>;
}

export interface PoolStats {
  capacity: number;
  /** Bytes actually allocated on disk by replicas and snapshots. */
  used: number;
  /** Bytes promised: the sum of replica and snapshot sizes. */
  committed: number;
  /** Bytes still available for thick allocation. */
  free: number;
}

async function allocated(path: string): Promise<number> {
  try {
    return (await stat(path)).blocks * 512;
  } catch {
    return 0;
  }
}

/**
 * Copy a file sharing its blocks (reflink) when the filesystem can; otherwise a sparse copy (a plain
 * fs.copyFile would allocate every hole of a thin replica).
 */
async function cloneFile(src: string, dst: string): Promise<boolean> {
  try {
    await copyFile(src, dst, constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw err;
    await rm(dst, { force: true });
    await execFileP('cp', ['--reflink=never', '--sparse=always', src, dst]);
    return false;
  }
}

/**
 * A pool: a directory with a declared capacity, holding replica files (replicas/<uuid>.img),
 * snapshot files (snapshots/<uuid>.img) and its metadata (pool.json, written atomically).
 */
export class Pool {
  readonly replicas = new Map<string, Replica>();

  private constructor(
    private meta: PoolMeta,
    readonly disk: string,
  ) {}

  get name(): string {
    return this.meta.name;
  }
  get uuid(): string {
    return this.meta.uuid;
  }
  get capacity(): number {
    return this.meta.capacity;
  }
  get snapshots(): SnapshotMeta[] {
    return Object.values(this.meta.snapshots);
  }

  static async hasMetadata(disk: string): Promise<boolean> {
    return stat(join(disk, POOL_META_FILE)).then(
      () => true,
      () => false,
    );
  }

  static async create(name: string, disk: string, capacity: number): Promise<Pool> {
    await mkdir(join(disk, 'replicas'), { recursive: true, mode: 0o700 });
    await mkdir(join(disk, 'snapshots'), { recursive: true, mode: 0o700 });
    const meta: PoolMeta = {
      version: 1,
      name,
      uuid: randomUUID(),
      capacity,
      createdAt: new Date().toISOString(),
      replicas: {},
      snapshots: {},
    };
    const pool = new Pool(meta, disk);
    await pool.save();
    return pool;
  }

  static async import(disk: string, expectedName?: string): Promise<Pool> {
    let raw: string;
    try {
      raw = await readFile(join(disk, POOL_META_FILE), 'utf8');
    } catch {
      throw notFound('pool metadata', join(disk, POOL_META_FILE), 'create the pool first');
    }
    let meta: PoolMeta;
    try {
      meta = JSON.parse(raw) as PoolMeta;
    } catch (err) {
      throw precondition(`pool metadata ${join(disk, POOL_META_FILE)} is corrupt: ${(err as Error).message}`);
    }
    if (expectedName && meta.name !== expectedName) {
      throw precondition(`directory ${disk} holds pool '${meta.name}', not '${expectedName}'`);
    }
    meta.snapshots ??= {};
    const pool = new Pool(meta, disk);
    for (const r of Object.values(meta.replicas)) {
      try {
        pool.replicas.set(r.uuid, await Replica.open(r, meta.name, pool.replicaPath(r.uuid)));
      } catch (err) {
        await pool.close();
        throw precondition(
          `pool '${meta.name}' cannot be imported: replica file ${pool.replicaPath(r.uuid)} cannot be opened (${(err as Error).message})`,
        );
      }
    }
    return pool;
  }

  private save(): Promise<void> {
    return writeJsonAtomic(join(this.disk, POOL_META_FILE), this.meta);
  }

  replicaPath(uuid: string): string {
    return join(this.disk, 'replicas', `${uuid}.img`);
  }
  snapshotPath(uuid: string): string {
    return join(this.disk, 'snapshots', `${uuid}.img`);
  }

  async stats(): Promise<PoolStats> {
    let used = 0;
    let committed = 0;
    let reserved = 0; // thick sizes + thin/snapshot allocation
    for (const r of this.replicas.values()) {
      const a = await allocated(r.path);
      used += a;
      committed += r.size;
      reserved += r.meta.thin ? a : Math.max(a, r.size);
    }
    for (const s of this.snapshots) {
      const a = await allocated(this.snapshotPath(s.uuid));
      used += a;
      committed += s.size;
      reserved += a;
    }
    return { capacity: this.capacity, used, committed, free: Math.max(0, this.capacity - reserved) };
  }

  private async checkSpace(what: string, size: number, thin: boolean, growth = size): Promise<void> {
    if (size > this.capacity) {
      throw exhausted(`${what} of ${size} bytes does not fit pool '${this.name}' of ${this.capacity} bytes`);
    }
    if (thin) return;
    const { free } = await this.stats();
    if (growth > free) {
      throw exhausted(
        `pool '${this.name}' has ${free} bytes free, ${what} needs ${growth}; use a thin replica or another pool`,
      );
    }
  }

  async createReplica(opts: { uuid: string; name: string; size: number; thin: boolean }): Promise<Replica> {
    if (this.replicas.has(opts.uuid)) throw alreadyExists('replica', opts.uuid, `in pool '${this.name}'`);
    await this.checkSpace(`replica '${opts.uuid}'`, opts.size, opts.thin);
    const path = this.replicaPath(opts.uuid);
    const fh = await open(path, 'wx', 0o600);
    await fh.close();
    try {
      await truncate(path, opts.size);
      if (!opts.thin) await execFileP('fallocate', ['-l', String(opts.size), path]);
    } catch (err) {
      await unlink(path).catch(() => {});
      throw exhausted(
        `cannot allocate replica '${opts.uuid}' in pool '${this.name}': ${(err as Error).message}`,
      );
    }
    const meta: ReplicaMeta = { ...opts, share: 'none', createdAt: new Date().toISOString() };
    return this.addReplica(meta);
  }

  private async addReplica(meta: ReplicaMeta): Promise<Replica> {
    const replica = await Replica.open(meta, this.name, this.replicaPath(meta.uuid));
    this.replicas.set(meta.uuid, replica);
    this.meta.replicas[meta.uuid] = meta;
    await this.save();
    return replica;
  }

  async destroyReplica(uuid: string): Promise<void> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    this.replicas.delete(uuid);
    delete this.meta.replicas[uuid];
    await this.save();
    await r.close();
    await rm(r.path, { force: true });
  }

  async resizeReplica(uuid: string, size: number): Promise<Replica> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    if (size < r.size) throw invalid(`replica '${uuid}' cannot shrink from ${r.size} to ${size} bytes`);
    if (size === r.size) return r;
    await this.checkSpace(`resize of replica '${uuid}'`, size, r.meta.thin, size - r.size);
    await r.resize(size);
    if (!r.meta.thin) await execFileP('fallocate', ['-l', String(size), r.path]);
    await this.save();
    return r;
  }

  async setShare(uuid: string, share: 'none' | 'nbd'): Promise<void> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    r.meta.share = share;
    await this.save();
  }

  async createSnapshot(replicaUuid: string, uuid: string, name: string): Promise<SnapshotMeta> {
    const r = this.replicas.get(replicaUuid);
    if (!r) throw notFound('replica', replicaUuid);
    if (this.meta.snapshots[uuid])
      throw alreadyExists('snapshot', uuid, `of replica '${this.meta.snapshots[uuid].replicaUuid}'`);
    const { free } = await this.stats();
    const need = await allocated(r.path);
    if (need > free)
      throw exhausted(
        `pool '${this.name}' has ${free} bytes free, a snapshot of replica '${replicaUuid}' needs ${need}`,
      );
    const dst = this.snapshotPath(uuid);
    const reflink = await r.withWritesHeld(() => cloneFile(r.path, dst));
    const snap: SnapshotMeta = {
      uuid,
      name,
      replicaUuid,
      size: r.size,
      createdAt: new Date().toISOString(),
      reflink,
    };
    this.meta.snapshots[uuid] = snap;
    await this.save();
    return snap;
  }

  async destroySnapshot(uuid: string): Promise<void> {
    if (!this.meta.snapshots[uuid]) throw notFound('snapshot', uuid);
    delete this.meta.snapshots[uuid];
    await this.save();
    await rm(this.snapshotPath(uuid), { force: true });
  }

  async cloneSnapshot(snapshotUuid: string, uuid: string, name: string): Promise<Replica> {
    const s = this.meta.snapshots[snapshotUuid];
    if (!s) throw notFound('snapshot', snapshotUuid);
    if (this.replicas.has(uuid)) throw alreadyExists('replica', uuid, `in pool '${this.name}'`);
    await this.checkSpace(`clone '${uuid}'`, s.size, true);
    await cloneFile(this.snapshotPath(snapshotUuid), this.replicaPath(uuid));
    return this.addReplica({
      uuid,
      name,
      size: s.size,
      thin: true,
      share: 'none',
      snapshotSource: snapshotUuid,
      createdAt: new Date().toISOString(),
    });
  }

  /** Remove the pool and its directory contents; refused while it holds replicas or snapshots. */
  async destroy(): Promise<void> {
    if (this.replicas.size > 0 || this.snapshots.length > 0) {
      throw precondition(
        `pool '${this.name}' still holds ${this.replicas.size} replica(s) and ${this.snapshots.length} snapshot(s); destroy them first`,
      );
    }
    await rm(join(this.disk, POOL_META_FILE), { force: true });
    await rmdir(join(this.disk, 'replicas')).catch(() => {});
    await rmdir(join(this.disk, 'snapshots')).catch(() => {});
    await rmdir(this.disk).catch(() => {});
  }

  /** Unload: close files, keep everything on disk. */
  async close(): Promise<void> {
    for (const r of this.replicas.values()) await r.close();
  }
}
