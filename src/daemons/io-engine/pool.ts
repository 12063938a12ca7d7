import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { closeSync, ftruncateSync, openSync, statSync, unlinkSync } from 'node:fs';
import {
  constants,
  copyFile,
  mkdir,
  open,
  readdir,
  readFile,
  rm,
  rmdir,
  stat,
  statfs,
  unlink,
} from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { everyStep } from '../../lib/every-step.js';
import { FileBackend } from '../../lib/nbd/file-backend.js';
import { alreadyExists, exhausted, invalid, notFound, precondition } from './errors.js';
import { MetadataLog, readJournal } from './metadata-log.js';
import { claimPoolDir } from './pool-claim.js';
import { PoolIoErrors } from './pool-io-errors.js';
import { PoolSpace } from './pool-space.js';
import { Replica, type ReplicaMeta } from './replica.js';

const execFileP = promisify(execFile);

export const POOL_META_FILE = 'pool.json';
/** Changes since pool.json was written (see MetadataLog). */
export const POOL_JOURNAL_FILE = 'pool.journal';

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
  /** Generation of pool.journal whose records apply on top of this file (absent: none). */
  journalGen?: number;
}

/** One journal record: the current value of a replica (`r`) or snapshot (`s`), null once removed. */
type PoolRecord = { r: string; v: ReplicaMeta | null } | { s: string; v: SnapshotMeta | null };

export interface PoolStats {
  /**
   * What the pool can hold: its declared capacity, or less when the filesystem under its directory
   * has less room (what it holds plus what the filesystem has left), so that free space, placement
   * and "pool full" tell the truth on a disk shared with other data.
   */
  capacity: number;
  /** Bytes the filesystem holding the pool directory has left (statfs). */
  diskRoom: number;
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
 * snapshot files (snapshots/<uuid>.img) and its metadata (pool.json plus the pool.journal of changes
 * since, see MetadataLog).
 */
export class Pool {
  readonly replicas = new Map<string, Replica>();
  /** Bumped whenever `replicas` gains or loses one: a paged listing reuses its list while this holds. */
  replicaChanges = 0;
  /** Files removed by the last import: created or destroyed around a crash, not in the metadata. */
  readonly removedOrphans: string[] = [];
  private readonly metaLog: MetadataLog;
  /** Serialized entry of every replica in the metadata, redone only when that replica changes. */
  private readonly replicaJson = new Map<string, string>();
  /** Directories that gained files since the last metadata write (their entries are fsynced first). */
  private readonly dirtyDirs = new Set<string>();
  private statsCache: { at: number; writes: number; value: Promise<PoolStats> } | null = null;
  /** Thin replicas' writes stay within the capacity. */
  readonly space: PoolSpace;
  /** Disk errors its replicas met: the pool reads Degraded for a while after one. */
  readonly ioErrors = new PoolIoErrors();
  /** Gives up this process's claim on the directory (pool-claim.ts), once the pool is unloaded. */
  private releaseClaim: () => Promise<void> = async () => {};

  private constructor(
    private meta: PoolMeta,
    readonly disk: string,
    journalLines = 0,
  ) {
    this.metaLog = new MetadataLog(
      join(disk, POOL_META_FILE),
      join(disk, POOL_JOURNAL_FILE),
      meta.journalGen ?? 0,
      {
        snapshot: (gen) => this.render(gen),
        record: (key) => this.record(key),
        entries: () => this.replicaJson.size + Object.keys(this.meta.snapshots).length,
      },
      () => this.syncDirtyDirs(),
      journalLines,
    );
    for (const uuid of Object.keys(meta.replicas)) this.replicaChanged(uuid);
    this.space = new PoolSpace(
      meta.name,
      () => this.capacity,
      () => this.holding(),
      // A refused write: the free space stats said a moment ago is stale (core reads it to decide
      // whether a child faulted here may return).
      () => {
        this.statsCache = null;
      },
    );
  }

  /** Bytes the pool holds now: thick replicas' sizes, thin replicas' and snapshots' allocation. */
  private holding(): number {
    let held = 0;
    for (const r of this.replicas.values()) held += r.holds(r.allocatedBytes());
    for (const s of this.snapshots)
      held += (statSync(this.snapshotPath(s.uuid), { throwIfNoEntry: false })?.blocks ?? 0) * 512;
    return held;
  }

  private replicaChanged(uuid: string): void {
    const r = this.meta.replicas[uuid];
    if (r) this.replicaJson.set(uuid, `${JSON.stringify(uuid)}:${JSON.stringify(r)}`);
    else this.replicaJson.delete(uuid);
  }

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

  /** `node`: the io-engine's node id, named in its claim on the directory. */
  static async create(name: string, disk: string, capacity: number, node = ''): Promise<Pool> {
    await mkdir(join(disk, 'replicas'), { recursive: true, mode: 0o700 });
    await mkdir(join(disk, 'snapshots'), { recursive: true, mode: 0o700 });
    const release = await claimPoolDir(disk, node);
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
    pool.releaseClaim = release;
    try {
      await pool.metaLog.save();
    } catch (err) {
      await release();
      throw err;
    }
    return pool;
  }

  static async import(disk: string, expectedName?: string, node = ''): Promise<Pool> {
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
    // Before anything is changed (the import removes files the metadata does not name).
    const release = await claimPoolDir(disk, node);
    try {
      return await Pool.load(meta, disk, release);
    } catch (err) {
      await release();
      throw err;
    }
  }

  private static async load(meta: PoolMeta, disk: string, release: () => Promise<void>): Promise<Pool> {
    let journal: { records: unknown[]; appendable: boolean };
    try {
      journal = await readJournal(join(disk, POOL_JOURNAL_FILE), meta.journalGen ?? 0);
      for (const rec of journal.records) applyRecord(meta, rec);
    } catch (err) {
      throw precondition(
        `pool metadata ${join(disk, POOL_JOURNAL_FILE)} is corrupt: ${(err as Error).message}`,
      );
    }
    const pool = new Pool(meta, disk, journal.appendable ? journal.records.length : 0);
    pool.releaseClaim = release;
    await pool.removeOrphans();
    for (const r of Object.values(meta.replicas)) {
      try {
        pool.replicas.set(
          r.uuid,
          await Replica.open(r, meta.name, pool.replicaPath(r.uuid), pool.space, pool.ioErrors),
        );
      } catch (err) {
        await pool.close();
        throw precondition(
          `pool '${meta.name}' cannot be imported: replica file ${pool.replicaPath(r.uuid)} cannot be opened (${(err as Error).message})`,
        );
      }
    }
    return pool;
  }

  /**
   * Queue a metadata write of a change (group commit: one write covers every change made while the
   * previous one was in flight). Mutations do not wait for it; the engine acknowledges an operation
   * only after `durable()`, which it awaits outside its control lock.
   */
  private saveReplica(uuid: string): Promise<void> {
    this.statsCache = null;
    this.space.invalidate();
    this.replicaChanged(uuid);
    return this.metaLog.save(`r:${uuid}`);
  }

  private saveSnapshot(uuid: string): Promise<void> {
    this.statsCache = null;
    this.space.invalidate();
    return this.metaLog.save(`s:${uuid}`);
  }

  /** pool.json for the current state, from the kept replica entries (no walk of the metadata). */
  private render(journalGen: number): string {
    this.meta.journalGen = journalGen;
    const { replicas: _, ...head } = this.meta;
    return `${JSON.stringify(head).slice(0, -1)},"replicas":{${[...this.replicaJson.values()].join(',')}}}\n`;
  }

  /** The journal line for entry `key` (`r:<uuid>` or `s:<uuid>`) as it is now. */
  private record(key: string): string {
    const id = key.slice(2);
    const rec: PoolRecord = key.startsWith('r:')
      ? { r: id, v: this.meta.replicas[id] ?? null }
      : { s: id, v: this.meta.snapshots[id] ?? null };
    return JSON.stringify(rec);
  }

  /** Resolves once every metadata change made so far is on disk. */
  durable(): Promise<void> {
    return this.metaLog.durable();
  }

  private async syncDirtyDirs(): Promise<void> {
    const dirs = [...this.dirtyDirs];
    this.dirtyDirs.clear();
    try {
      await Promise.all(
        dirs.map(async (d) => {
          const fh = await open(d, 'r');
          try {
            await fh.sync();
          } finally {
            await fh.close();
          }
        }),
      );
    } catch (err) {
      for (const d of dirs) this.dirtyDirs.add(d);
      throw err;
    }
  }

  /**
   * A file the metadata does not name was never acknowledged (a create is acknowledged only once the
   * metadata naming it is durable) or belongs to a destroy whose metadata was written (the file is
   * removed only after): either way it is removed, as are temp files of interrupted metadata writes.
   */
  private async removeOrphans(): Promise<void> {
    const sweep = async (dir: string, known: (uuid: string) => boolean) => {
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        const m = /^(.+)\.img$/.exec(name);
        if (m && !known(m[1])) {
          await rm(join(dir, name), { force: true });
          this.removedOrphans.push(join(dir, name));
        }
      }
    };
    await sweep(join(this.disk, 'replicas'), (u) => u in this.meta.replicas);
    await sweep(join(this.disk, 'snapshots'), (u) => u in this.meta.snapshots);
    for (const name of await readdir(this.disk)) {
      if (name.startsWith(`${POOL_META_FILE}.tmp-`)) {
        await rm(join(this.disk, name), { force: true });
        this.removedOrphans.push(join(this.disk, name));
      }
    }
  }

  replicaPath(uuid: string): string {
    return join(this.disk, 'replicas', `${uuid}.img`);
  }
  snapshotPath(uuid: string): string {
    return join(this.disk, 'snapshots', `${uuid}.img`);
  }

  /**
   * Pool usage; cached for a second (it stats every file), dropped on every metadata change and
   * after thin writes (a volume filled just before a scale otherwise read as an empty pool).
   */
  stats(): Promise<PoolStats> {
    const now = performance.now(); // a step of the wall clock back must not keep old figures
    const { writes } = this.space;
    const cached = this.statsCache;
    if (cached && now - cached.at < 1000 && cached.writes === writes) return cached.value;
    const value = this.computeStats();
    this.statsCache = { at: now, writes, value };
    value.catch(() => {
      if (this.statsCache?.value === value) this.statsCache = null;
    });
    return value;
  }

  private async computeStats(): Promise<PoolStats> {
    let used = 0;
    let committed = 0;
    let reserved = 0; // thick sizes + thin/snapshot allocation
    for (const r of this.replicas.values()) {
      const a = await allocated(r.path);
      used += a;
      committed += r.size;
      reserved += r.holds(a);
    }
    for (const s of this.snapshots) {
      const a = await allocated(this.snapshotPath(s.uuid));
      used += a;
      committed += s.size;
      reserved += a;
    }
    const fs = await statfs(this.disk);
    const diskRoom = fs.bavail * fs.bsize;
    return {
      capacity: Math.min(this.capacity, used + diskRoom),
      diskRoom,
      used,
      committed,
      free: Math.max(0, Math.min(this.capacity - reserved, diskRoom)),
    };
  }

  private async checkSpace(what: string, size: number, thin: boolean, growth = size): Promise<void> {
    if (size > this.capacity) {
      throw exhausted(`${what} of ${size} bytes does not fit pool '${this.name}' of ${this.capacity} bytes`);
    }
    if (thin) return;
    const { free, diskRoom } = await this.stats();
    if (growth > free) {
      const disk =
        diskRoom === free ? ` (the filesystem holding ${this.disk} has ${diskRoom} bytes left)` : '';
      throw exhausted(
        `pool '${this.name}' has ${free} bytes free${disk}, ${what} needs ${growth}; use a thin replica or another pool`,
      );
    }
  }

  async createReplica(opts: { uuid: string; name: string; size: number; thin: boolean }): Promise<Replica> {
    if (this.replicas.has(opts.uuid)) throw alreadyExists('replica', opts.uuid, `in pool '${this.name}'`);
    await this.checkSpace(`replica '${opts.uuid}'`, opts.size, opts.thin);
    const path = this.replicaPath(opts.uuid);
    const allocationFailed = (err: unknown) =>
      exhausted(`cannot allocate replica '${opts.uuid}' in pool '${this.name}': ${(err as Error).message}`);
    // Created and sized synchronously: microseconds of local metadata work, where the same steps
    // through the thread pool cost about ten times the CPU (the io-engine's main cost per create).
    // Durability comes from the metadata commit the create waits for, which stays asynchronous.
    const fd = openSync(path, 'wx', 0o600);
    this.dirtyDirs.add(join(this.disk, 'replicas'));
    try {
      ftruncateSync(fd, opts.size);
    } catch (err) {
      closeSync(fd);
      try {
        unlinkSync(path);
      } catch {
        // left for the orphan sweep at the next import; the allocation error is what matters
      }
      throw allocationFailed(err);
    }
    closeSync(fd);
    if (!opts.thin) {
      try {
        await execFileP('fallocate', ['-l', String(opts.size), path]);
      } catch (err) {
        await unlink(path).catch(() => {});
        throw allocationFailed(err);
      }
    }
    const meta: ReplicaMeta = { ...opts, share: 'none', createdAt: new Date().toISOString() };
    return this.addReplica(
      meta,
      new Replica(meta, this.name, path, FileBackend.onFirstUse(path, opts.size), this.space, this.ioErrors),
    );
  }

  private async addReplica(meta: ReplicaMeta, opened?: Replica): Promise<Replica> {
    const replica =
      opened ?? (await Replica.open(meta, this.name, this.replicaPath(meta.uuid), this.space, this.ioErrors));
    this.replicas.set(meta.uuid, replica);
    this.replicaChanges++;
    this.meta.replicas[meta.uuid] = meta;
    void this.saveReplica(meta.uuid);
    return replica;
  }

  async destroyReplica(uuid: string): Promise<void> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    this.replicas.delete(uuid);
    this.replicaChanges++;
    delete this.meta.replicas[uuid];
    // The file goes only once no durable metadata names it.
    await this.saveReplica(uuid);
    await r.close();
    await rm(r.path, { force: true });
    this.space.invalidate();
  }

  async resizeReplica(uuid: string, size: number): Promise<Replica> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    if (size < r.size) throw invalid(`replica '${uuid}' cannot shrink from ${r.size} to ${size} bytes`);
    if (size === r.size) return r;
    await this.checkSpace(`resize of replica '${uuid}'`, size, r.meta.thin, size - r.size);
    await r.resize(size);
    if (!r.meta.thin) await execFileP('fallocate', ['-l', String(size), r.path]);
    void this.saveReplica(uuid);
    return r;
  }

  async setShare(uuid: string, share: 'none' | 'nbd'): Promise<void> {
    const r = this.replicas.get(uuid);
    if (!r) throw notFound('replica', uuid);
    r.meta.share = share;
    void this.saveReplica(uuid);
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
    this.dirtyDirs.add(join(this.disk, 'snapshots'));
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
    void this.saveSnapshot(uuid);
    return snap;
  }

  async destroySnapshot(uuid: string): Promise<void> {
    if (!this.meta.snapshots[uuid]) throw notFound('snapshot', uuid);
    delete this.meta.snapshots[uuid];
    await this.saveSnapshot(uuid);
    await rm(this.snapshotPath(uuid), { force: true });
    this.space.invalidate();
  }

  async cloneSnapshot(snapshotUuid: string, uuid: string, name: string): Promise<Replica> {
    const s = this.meta.snapshots[snapshotUuid];
    if (!s) throw notFound('snapshot', snapshotUuid);
    if (this.replicas.has(uuid)) throw alreadyExists('replica', uuid, `in pool '${this.name}'`);
    await this.checkSpace(`clone '${uuid}'`, s.size, true);
    this.dirtyDirs.add(join(this.disk, 'replicas'));
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
    await this.durable().catch(() => {}); // no write may rename pool.json back after it is removed
    await this.metaLog.close();
    await rm(join(this.disk, POOL_META_FILE), { force: true });
    await rm(join(this.disk, POOL_JOURNAL_FILE), { force: true });
    await rmdir(join(this.disk, 'replicas')).catch(() => {});
    await rmdir(join(this.disk, 'snapshots')).catch(() => {});
    await this.releaseClaim();
    await rmdir(this.disk).catch(() => {});
  }

  /** Unload: close files, keep everything on disk. */
  async close(): Promise<void> {
    await everyStep([
      () => this.durable(),
      () => this.metaLog.close(),
      ...[...this.replicas.values()].map((r) => () => r.close()),
      () => this.releaseClaim(),
    ]);
  }
}

/** Apply one journal record to the metadata read from pool.json. */
function applyRecord(meta: PoolMeta, rec: unknown): void {
  const r = rec as Partial<Record<'r' | 's', unknown>> & { v?: unknown };
  const value = r.v;
  if (value !== null && (typeof value !== 'object' || Array.isArray(value))) {
    throw new Error(`record ${JSON.stringify(rec)} has no value`);
  }
  if (typeof r.r === 'string') {
    if (value) meta.replicas[r.r] = value as ReplicaMeta;
    else delete meta.replicas[r.r];
  } else if (typeof r.s === 'string') {
    if (value) meta.snapshots[r.s] = value as SnapshotMeta;
    else delete meta.snapshots[r.s];
  } else {
    throw new Error(`record ${JSON.stringify(rec)} names no replica or snapshot`);
  }
}
