import { isAbsolute, join, resolve, sep } from 'node:path';
import { localReplicaUri, replicaUuidOfUri, withReplicaUuid } from '../../lib/child-uri.js';
import { everyStep } from '../../lib/every-step.js';
import type { Logger } from '../../lib/logger.js';
import { NbdClient, parseNbdUri } from '../../lib/nbd/client.js';
import { exportForClient, type NbdServer } from '../../lib/nbd/server.js';
import { type KeySpace, nexusInfoKey, volumeNexusInfoPrefix } from '../../lib/store/keys.js';
import type { Store } from '../../lib/store/types.js';
import {
  alreadyExists,
  ChildUnreachable,
  checkName,
  invalid,
  notFound,
  precondition,
  unavailable,
} from './errors.js';
import { Nexus } from './nexus.js';
import { type ChildState, NexusChild } from './nexus-child.js';
import { NexusInfoWriter, readNexusInfo } from './nexus-info.js';
import { resizeNexus } from './nexus-resize.js';
import { Pool } from './pool.js';
import type { Replica } from './replica.js';

export interface EngineContext {
  nodeId: string;
  poolDir: string;
  store: Store | null;
  keySpace: KeySpace;
  nbd: NbdServer;
  log: Logger;
  /** A remote child request unanswered this long faults the child. */
  childTimeoutMs: number;
  /** A remote child whose io-engine answers nothing, a keep-alive probe included, this long is faulted. */
  childKeepAliveMs: number;
  nexusInfoRetries: number;
}

/**
 * The io-engine's state: pools (with their replicas and snapshots) and nexuses. Control operations
 * run one at a time; I/O never takes this lock. Pool metadata writes are group-committed outside it.
 */
export class Engine {
  readonly pools = new Map<string, Pool>();
  readonly nexuses = new Map<string, Nexus>();
  private queue: Promise<unknown> = Promise.resolve();

  constructor(readonly ctx: EngineContext) {}

  /**
   * Run a control operation after the previous ones. Its result is returned (acknowledged) only once
   * the pool metadata it changed is durable; the lock is released before that wait, so the metadata
   * changes of all operations that ran meanwhile share one write.
   */
  async serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => {});
    const result = await next;
    await Promise.all([...this.pools.values()].map((p) => p.durable()));
    return result;
  }

  private logOrphans(pool: Pool): void {
    if (pool.removedOrphans.length > 0)
      this.ctx.log.warn(
        { pool: pool.name, files: pool.removedOrphans },
        'removed files the pool metadata does not name (interrupted create or destroy)',
      );
  }

  // ---- pools -------------------------------------------------------------------------------

  /**
   * For a destroy that names its pool: while that pool is not imported (an io-engine that just
   * restarted), what it holds is not loaded, and "not found" would tell core it is gone.
   */
  requireImported(pool: string): void {
    if (pool && !this.pools.has(pool))
      throw unavailable(
        `pool '${pool}' is not imported on node '${this.ctx.nodeId}' (yet); retry once it is`,
      );
  }

  pool(name: string): Pool {
    const p = this.pools.get(name);
    if (!p) throw notFound('pool', name, `on node '${this.ctx.nodeId}'; create or import it first`);
    return p;
  }

  private poolDisk(name: string, disk: string): string {
    if (!disk) return join(this.ctx.poolDir, name);
    if (!isAbsolute(disk)) throw invalid(`pool disk '${disk}' must be an absolute directory path`);
    // A pool lives under --pool-dir: a caller of the API must not make us write anywhere on the host.
    const dir = resolve(disk);
    const root = resolve(this.ctx.poolDir);
    if (!dir.startsWith(`${root}${sep}`)) {
      throw invalid(`pool disk '${disk}' must lie under the node's --pool-dir ${root}`);
    }
    return dir;
  }

  async createPool(name: string, disk: string, capacity: number): Promise<Pool> {
    checkName('pool name', name);
    const dir = this.poolDisk(name, disk);
    if (this.pools.has(name)) throw alreadyExists('pool', name, `on node '${this.ctx.nodeId}'`);
    for (const p of this.pools.values())
      if (p.disk === dir) throw alreadyExists('pool on disk', dir, `it is pool '${p.name}'`);
    const pool = (await Pool.hasMetadata(dir))
      ? await Pool.import(dir, name, this.ctx.nodeId)
      : await Pool.create(name, dir, capacity, this.ctx.nodeId);
    this.logOrphans(pool);
    this.pools.set(name, pool);
    await this.reshare(pool);
    return pool;
  }

  async importPool(name: string, disk: string): Promise<Pool> {
    checkName('pool name', name);
    if (this.pools.has(name)) throw alreadyExists('pool', name, `on node '${this.ctx.nodeId}'`);
    const pool = await Pool.import(this.poolDisk(name, disk), name, this.ctx.nodeId);
    this.logOrphans(pool);
    this.pools.set(name, pool);
    await this.reshare(pool);
    return pool;
  }

  /** Replicas shared before a restart are shared again when their pool comes back. */
  private async reshare(pool: Pool): Promise<void> {
    for (const r of pool.replicas.values()) {
      if (r.meta.share === 'nbd' && !this.ctx.nbd.hasExport(r.uuid)) this.ctx.nbd.addExport(r.uuid, r);
    }
  }

  private checkPoolIdle(pool: Pool, what: string): void {
    for (const r of pool.replicas.values()) {
      if (r.usedBy.size > 0)
        throw precondition(
          `cannot ${what} pool '${pool.name}': replica '${r.uuid}' is used by nexus ${[...r.usedBy].join(', ')}`,
        );
    }
  }

  async destroyPool(name: string): Promise<void> {
    const pool = this.pool(name);
    await pool.destroy();
    this.pools.delete(name);
  }

  async exportPool(name: string): Promise<void> {
    const pool = this.pool(name);
    this.checkPoolIdle(pool, 'export');
    for (const r of pool.replicas.values())
      if (this.ctx.nbd.hasExport(r.uuid)) await this.ctx.nbd.removeExport(r.uuid);
    await pool.close();
    this.pools.delete(name);
  }

  // ---- replicas ----------------------------------------------------------------------------

  findReplica(uuid: string): { pool: Pool; replica: Replica } | null {
    for (const pool of this.pools.values()) {
      const replica = pool.replicas.get(uuid);
      if (replica) return { pool, replica };
    }
    return null;
  }

  replica(uuid: string): { pool: Pool; replica: Replica } {
    const found = this.findReplica(uuid);
    if (!found) throw notFound('replica', uuid, `on node '${this.ctx.nodeId}'`);
    return found;
  }

  replicaUri(r: Replica): string {
    return r.meta.share === 'nbd'
      ? withReplicaUuid(this.ctx.nbd.uri(r.uuid), r.uuid)
      : localReplicaUri(r.uuid);
  }

  async createReplica(o: {
    uuid: string;
    name: string;
    pool: string;
    size: number;
    thin: boolean;
    share: string;
  }): Promise<Replica> {
    checkName('replica uuid', o.uuid);
    const existing = this.findReplica(o.uuid);
    if (existing) throw alreadyExists('replica', o.uuid, `in pool '${existing.pool.name}'`);
    if (o.share !== 'none' && o.share !== 'nbd')
      throw invalid(`share protocol '${o.share}' is not supported; use none or nbd`);
    const pool = this.pool(o.pool);
    const r = await pool.createReplica({ uuid: o.uuid, name: o.name || o.uuid, size: o.size, thin: o.thin });
    if (o.share === 'nbd') await this.shareReplica(o.uuid);
    return r;
  }

  async destroyReplica(uuid: string): Promise<void> {
    const { pool, replica } = this.replica(uuid);
    if (replica.usedBy.size > 0) {
      throw precondition(
        `replica '${uuid}' is a child of nexus ${[...replica.usedBy].join(', ')}; remove it from the nexus first`,
      );
    }
    if (this.ctx.nbd.hasExport(uuid)) await this.ctx.nbd.removeExport(uuid);
    await pool.destroyReplica(uuid);
  }

  async shareReplica(uuid: string): Promise<Replica> {
    const { pool, replica } = this.replica(uuid);
    if (this.nexuses.has(uuid)) throw alreadyExists('NBD export', uuid, 'a nexus uses that name');
    if (!this.ctx.nbd.hasExport(uuid)) this.ctx.nbd.addExport(uuid, replica);
    if (replica.meta.share !== 'nbd') await pool.setShare(uuid, 'nbd');
    return replica;
  }

  async unshareReplica(uuid: string): Promise<Replica> {
    const { pool, replica } = this.replica(uuid);
    if (this.ctx.nbd.hasExport(uuid)) await this.ctx.nbd.removeExport(uuid);
    if (replica.meta.share !== 'none') await pool.setShare(uuid, 'none');
    return replica;
  }

  // ---- nexus -------------------------------------------------------------------------------

  /** How a nexus connects to a remote child: its request timeout and its keep-alive. */
  private get childConnection() {
    return { requestTimeoutMs: this.ctx.childTimeoutMs, keepAliveMs: this.ctx.childKeepAliveMs };
  }

  nexus(uuid: string): Nexus {
    const n = this.nexuses.get(uuid);
    if (!n) throw notFound('nexus', uuid, `on node '${this.ctx.nodeId}'`);
    return n;
  }

  /** Open a child URI: a local replica (bdev:///<uuid>) or a remote one (nbd://host:port/<export>). */
  private async openChild(nexus: Nexus, uri: string, state: ChildState): Promise<NexusChild> {
    let parsed: URL;
    try {
      parsed = new URL(uri);
    } catch {
      throw invalid(
        `child URI '${uri}' is not a URI; use bdev:///<replica-uuid> or nbd://host:port/<export>`,
      );
    }
    const uuid = replicaUuidOfUri(uri);
    if (!uuid) throw invalid(`child URI '${uri}' names no replica`);
    let child: NexusChild;
    if (parsed.protocol === 'bdev:') {
      const { replica } = this.replica(decodeURIComponent(parsed.pathname.replace(/^\/+/, '')));
      if (replica.usedBy.size > 0)
        throw precondition(
          `replica '${replica.uuid}' is already a child of nexus ${[...replica.usedBy].join(', ')}`,
        );
      replica.usedBy.add(nexus.uuid);
      child = new NexusChild(
        uri,
        uuid,
        replica.forClient(nexus.uuid),
        async () => void replica.usedBy.delete(nexus.uuid),
        state,
      );
    } else if (parsed.protocol === 'nbd:') {
      // The nexus names itself in the export name: the replica's io-engine gives it the reservation.
      const target = parseNbdUri(uri);
      const reserved = { ...target, exportName: exportForClient(target.exportName, nexus.uuid) };
      let client: NbdClient;
      try {
        client = await NbdClient.connect(reserved, this.childConnection);
      } catch (err) {
        throw new ChildUnreachable(
          `cannot open child '${uri}' of nexus '${nexus.uuid}': ${(err as Error).message}`,
        );
      }
      child = new NexusChild(uri, uuid, client, () => client.close(), state);
      const watch = (c: NbdClient) => {
        // Only the connection the child serves from faults it (a replaced one is closed on purpose).
        c.onClose((err) => {
          if (child.backend === c) void nexus.childFailed(child, err);
        });
      };
      watch(client);
      child.reopen = async () => {
        const fresh = await NbdClient.connect(reserved, this.childConnection);
        watch(fresh);
        return { backend: fresh, detach: () => fresh.close() };
      };
    } else {
      throw invalid(`child URI '${uri}' has unsupported scheme '${parsed.protocol}'; use bdev:/// or nbd://`);
    }
    if (child.backend.size < nexus.size) {
      await child.detach();
      throw invalid(
        `child '${uri}' has ${child.backend.size} bytes, nexus '${nexus.uuid}' needs ${nexus.size}`,
      );
    }
    return child;
  }

  async createNexus(o: {
    uuid: string;
    name: string;
    size: number;
    children: string[];
    volumeId: string;
    nexusInfoKey: string;
  }): Promise<Nexus> {
    checkName('nexus uuid', o.uuid);
    if (o.volumeId) checkName('volume id', o.volumeId);
    if (this.nexuses.has(o.uuid)) throw alreadyExists('nexus', o.uuid, `on node '${this.ctx.nodeId}'`);
    if (this.ctx.nbd.hasExport(o.uuid))
      throw alreadyExists('NBD export', o.uuid, 'a replica is shared under that name');
    if (o.children.length === 0) throw invalid(`nexus '${o.uuid}' needs at least one child`);
    if (new Set(o.children.map((u) => replicaUuidOfUri(u) ?? u)).size !== o.children.length)
      throw invalid(`nexus '${o.uuid}' lists a child twice`);
    const key = o.nexusInfoKey || nexusInfoKey(this.ctx.keySpace, o.uuid, o.volumeId || null);
    const previous = await readNexusInfo(
      this.ctx.store,
      key,
      o.volumeId ? volumeNexusInfoPrefix(this.ctx.keySpace, o.volumeId) : null,
    );
    // Which children may serve I/O right away, which are rebuilt (docs/mayastor-compat.md §3.6).
    let online = o.children;
    let rebuild: string[] = [];
    if (previous) {
      const healthy = new Set(previous.info.children.filter((c) => c.healthy).map((c) => c.uuid));
      const usable = o.children.filter((u) => healthy.has(replicaUuidOfUri(u) ?? ''));
      const skipped = o.children.filter((u) => !healthy.has(replicaUuidOfUri(u) ?? ''));
      if (usable.length === 0) {
        throw precondition(
          `no healthy child for nexus '${o.uuid}': NexusInfo ${previous.key} marks none of [${o.children.join(', ')}] healthy; manual intervention required`,
        );
      }
      online = previous.info.clean_shutdown ? usable : usable.slice(0, 1);
      rebuild = previous.info.clean_shutdown ? [] : usable.slice(1);
      this.ctx.log.info(
        {
          nexus: o.uuid,
          nexusInfo: previous.key,
          cleanShutdown: previous.info.clean_shutdown,
          online,
          rebuild,
          skipped,
        },
        'nexus created from NexusInfo',
      );
    }
    const writer = new NexusInfoWriter(this.ctx.store, key, this.ctx.log, this.ctx.nexusInfoRetries);
    const nexus = new Nexus(
      o.uuid,
      o.name || o.volumeId || o.uuid,
      o.size,
      o.volumeId || null,
      writer,
      this.ctx.log,
    );
    // Opened together: children behind a partition cost one connect timeout, not one each.
    const planned = [
      ...online.map((uri) => ({ uri, state: 'Online' as const })),
      ...rebuild.map((uri) => ({ uri, state: 'Degraded' as const })),
    ];
    const opened = await Promise.allSettled(planned.map((p) => this.openChild(nexus, p.uri, p.state)));
    const children = opened.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = opened.find((r) => r.status === 'rejected' && !(r.reason instanceof ChildUnreachable));
    // After an unclean shutdown one healthy child is the source the others are rebuilt from: when
    // the one chosen cannot be reached, another healthy one is.
    if (!children.some((c) => c.state === 'Online')) {
      const source = children.find((c) => c.state === 'Degraded');
      if (source) source.state = 'Online';
    }
    if (refused || !children.some((c) => c.state === 'Online')) {
      for (const c of children) await c.detach().catch(() => {});
      throw ((refused ?? opened.find((r) => r.status === 'rejected')) as PromiseRejectedResult).reason;
    }
    // A child that cannot be reached (its node, or the network to it, is down) does not keep the
    // volume without a target while another can serve: it starts Faulted and is rebuilt in full
    // once back (Mayastor's nexus comes up Degraded the same way).
    for (const [i, r] of opened.entries()) {
      if (r.status === 'fulfilled') nexus.children.push(r.value);
      else {
        const { uri } = planned[i];
        const reason = (r.reason as Error).message;
        nexus.children.push(NexusChild.unreachable(uri, replicaUuidOfUri(uri) ?? uri, o.size, reason));
        this.ctx.log.warn(
          { nexus: o.uuid, child: uri, reason },
          'nexus created without a child it cannot reach',
        );
      }
    }
    nexus.onSelfShutdown = async () => {
      if (nexus.exportedAs) await this.ctx.nbd.removeExport(nexus.exportedAs);
      nexus.exportedAs = null;
    };
    if (!(await nexus.persist())) {
      for (const c of nexus.children) await c.detach().catch(() => {});
      throw unavailable(
        `nexus '${o.uuid}' not created: its NexusInfo ${key} cannot be written to the store; check the store`,
      );
    }
    this.nexuses.set(o.uuid, nexus);
    for (const c of nexus.children) if (c.state === 'Degraded') nexus.startRebuild(c);
    return nexus;
  }

  async publishNexus(uuid: string, protocol: string): Promise<Nexus> {
    const nexus = this.nexus(uuid);
    if (protocol && protocol !== 'nbd') throw invalid(`protocol '${protocol}' is not supported; use nbd`);
    if (nexus.isShutdown) throw precondition(`nexus '${uuid}' is shut down; destroy and create it again`);
    if (!nexus.exportedAs) {
      this.ctx.nbd.addExport(uuid, nexus);
      nexus.exportedAs = uuid;
    }
    return nexus;
  }

  async unpublishNexus(uuid: string): Promise<Nexus> {
    const nexus = this.nexus(uuid);
    if (nexus.exportedAs) {
      await this.ctx.nbd.removeExport(nexus.exportedAs);
      nexus.exportedAs = null;
    }
    return nexus;
  }

  targetUri(nexus: Nexus): string {
    return nexus.exportedAs ? this.ctx.nbd.uri(nexus.exportedAs) : '';
  }

  async shutdownNexus(uuid: string): Promise<Nexus> {
    const nexus = await this.unpublishNexus(uuid);
    await nexus.shutdownNexus();
    return nexus;
  }

  async destroyNexus(uuid: string): Promise<void> {
    await this.shutdownNexus(uuid);
    this.nexuses.delete(uuid);
  }

  async addChild(uuid: string, uri: string): Promise<Nexus> {
    const nexus = this.nexus(uuid);
    if (nexus.isShutdown) throw precondition(`nexus '${uuid}' is shut down`);
    const existing = nexus.children.find((c) => c.uri === uri || c.uuid === replicaUuidOfUri(uri));
    if (existing && existing.state === 'Faulted' && existing.uuid === replicaUuidOfUri(uri)) {
      // The same replica is back (Mayastor's online child): reconnect it and rebuild it from the
      // log of writes it missed when the nexus kept one, else in full.
      const fresh = await this.openChild(nexus, uri, 'Degraded');
      try {
        await nexus.returnChild(existing, fresh);
      } catch (err) {
        await fresh.detach().catch(() => {});
        throw err;
      }
      return nexus;
    }
    if (existing) throw alreadyExists('child', uri, `of nexus '${uuid}'`);
    const child = await this.openChild(nexus, uri, 'Degraded');
    await nexus.addChild(child);
    return nexus;
  }

  /** Grow a nexus online (see nexus-resize.ts); shrinking is refused, the same size is a no-op. */
  async resizeNexus(uuid: string, size: number): Promise<Nexus> {
    const nexus = this.nexus(uuid);
    await resizeNexus(nexus, size, this.ctx.log);
    return nexus;
  }

  /** Stop: every nexus shuts down cleanly (NexusInfo records it), pools are unloaded. */
  async stop(): Promise<void> {
    for (const n of this.nexuses.values()) {
      await this.shutdownNexus(n.uuid).catch((err) =>
        this.ctx.log.error({ nexus: n.uuid, err: String(err) }, 'shutdown failed'),
      );
    }
    await everyStep([...this.pools.values()].map((p) => () => p.close()));
  }
}
