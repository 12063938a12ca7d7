import { readPrefixPages } from '../../lib/catalog/pages.js';
import type { Logger } from '../../lib/logger.js';
import {
  cloneSpec,
  isCordoned,
  type NexusSpec,
  type NodeSpec,
  nexusSpec,
  nodeSpec,
  type PoolSpec,
  poolRefName,
  poolSpec,
  type ReplicaSpec,
  replicaSpec,
  type SpecCodec,
  type VolumeSnapshot,
  type VolumeSpec,
  volumeSnapshot,
  volumeSpec,
} from '../../lib/specs/index.js';
import { type KeySpace, nodeLivenessPrefix, objectKey, typePrefix } from '../../lib/store/keys.js';
import type { Store, Watch } from '../../lib/store/types.js';
import type { NexusState, PoolState, ReplicaState } from './engine-api.js';
import { type CoreEvent, eventKey } from './events.js';
import { type GuardedWriter, isUnansweredWrite } from './persist.js';
import type { NodeView, PoolView } from './scheduler.js';
import { SpecsByOwner } from './specs-by-owner.js';
import { busy, notFound, SvcError } from './svc-error.js';

export interface NodeLive {
  online: boolean;
  grpcEndpoint: string | null;
  nbdEndpoint: string | null;
  /** When the node was last seen going offline (performance.now(); 0 while online). */
  offlineSince: number;
  /** The io-engine process's start time from its liveness record: a new one means a restart. */
  startedAt: string | null;
}

/**
 * Core's in-memory view: every spec loaded from the store at start and kept in step with each write
 * (core is the only writer of specs), plus live state: node liveness from the io-engines' lease-bound
 * keys and pool/replica/nexus state polled from io-engines.
 */
export class Registry {
  readonly volumes = new Map<string, VolumeSpec>();
  readonly replicas = new Map<string, ReplicaSpec>();
  readonly pools = new Map<string, PoolSpec>();
  readonly nexuses = new Map<string, NexusSpec>();
  readonly nodes = new Map<string, NodeSpec>();
  readonly snapshots = new Map<string, VolumeSnapshot>();

  readonly nodeLive = new Map<string, NodeLive>();
  readonly poolStates = new Map<string, PoolState>();
  /** Per node: replica and nexus state as last polled. */
  readonly replicaStates = new Map<string, Map<string, ReplicaState>>();
  readonly nexusStates = new Map<string, Map<string, NexusState>>();
  /**
   * Per node: bumped whenever an operation edits the cached replica/nexus state, so a poll that
   * started earlier does not overwrite fresher state with its older snapshot.
   */
  readonly stateVersion = new Map<string, number>();
  touch(node: string): void {
    this.stateVersion.set(node, (this.stateVersion.get(node) ?? 0) + 1);
  }
  setNexusState(node: string, st: NexusState): void {
    this.touch(node);
    const m = this.nexusStates.get(node) ?? new Map<string, NexusState>();
    m.set(st.uuid, st);
    this.nexusStates.set(node, m);
  }
  dropNexusState(node: string, uuid: string): void {
    this.touch(node);
    this.nexusStates.get(node)?.delete(uuid);
  }
  setReplicaState(node: string, st: ReplicaState): void {
    this.touch(node);
    const m = this.replicaStates.get(node) ?? new Map<string, ReplicaState>();
    m.set(st.uuid, st);
    this.replicaStates.set(node, m);
  }
  dropReplicaState(node: string, uuid: string): void {
    this.touch(node);
    this.replicaStates.get(node)?.delete(uuid);
  }
  /** Per node: pool ids its io-engine reported at the last poll (absent = not polled yet). */
  readonly polledPools = new Map<string, Set<string>>();
  /**
   * Nodes whose io-engine did not answer core's last poll at all (deadline exceeded, unavailable)
   * while their liveness lease holds: a cut between core and the node. Placement tries their pools
   * last, so a create does not wait out the request timeout on them while other pools can serve.
   */
  readonly unanswering = new Set<string>();
  /**
   * Pools whose last re-import failed (pool reconciler), with why: their replicas read as missing,
   * not unknown.
   */
  readonly poolImportFailed = new Map<string, string>();

  /** Resources held by an operation, with the error a request meets meanwhile (default: busy, 409). */
  private readonly busySet = new Map<string, (() => SvcError) | undefined>();
  private readonly replicasByVolume = new SpecsByOwner<ReplicaSpec>((r) => r.uuid);
  private readonly snapshotsByVolume = new SpecsByOwner<VolumeSnapshot>((s) => s.spec.uuid);
  private livenessWatch: Watch | null = null;
  /** performance.now() at start, as offlineSince: node deadlines must not jump with the wall clock. */
  private readonly startedAt = performance.now();
  onNodeChange: (node: string, online: boolean) => void = () => {};

  constructor(
    readonly store: Store,
    readonly space: KeySpace,
    readonly writer: GuardedWriter,
    private readonly log: Logger,
  ) {}

  key(type: string, id: string): string {
    return objectKey(this.space, type, id);
  }

  /**
   * Load every spec type in Mayastor's order, page by page, through the codecs: a value that does
   * not decode stops core with the DecodeError naming its key and field (as `storctl get` reports it).
   */
  async load(): Promise<void> {
    // Pages as `storctl get` reads them (large, the next one requested while this one decodes, big
    // prefixes split): 500-key pages made etcd 3.4 count the rest of the range on every request,
    // quadratic in the volumes (100k volumes on etcd: 31 s to ready).
    const load = async <T>(codec: SpecCodec<T>, into: Map<string, T>) => {
      for await (const page of readPrefixPages(this.store, typePrefix(this.space, codec.type))) {
        for (const kv of page) {
          const v = codec.decode(kv.key, kv.value);
          into.set(codec.idOf(v)!, v);
        }
      }
    };
    await load(volumeSpec, this.volumes);
    await load(nodeSpec, this.nodes);
    await load(nexusSpec, this.nexuses);
    await load(poolSpec, this.pools);
    await load(replicaSpec, this.replicas);
    for (const r of this.replicas.values()) {
      this.indexReplica(r, true);
      this.countReplica(r, 1);
    }
    await load(volumeSnapshot, this.snapshots);
    for (const sn of this.snapshots.values()) this.snapshotsByVolume.add(sn.spec.source_id, sn);
  }

  /** Re-read NodeSpecs: io-engines register (write) their own NodeSpec. */
  async refreshNodes(): Promise<void> {
    const { kvs } = await this.store.range(typePrefix(this.space, 'NodeSpec'));
    const seen = new Set<string>();
    for (const kv of kvs) {
      try {
        const n = nodeSpec.decode(kv.key, kv.value);
        this.nodes.set(n.id, n);
        seen.add(n.id);
      } catch (err) {
        // `storctl get nodes` reports an undecodable NodeSpec too; keep the cached one meanwhile.
        const id = kv.key.slice(kv.key.lastIndexOf('/') + 1);
        if (this.nodes.has(id)) seen.add(id);
        this.log.warn({ key: kv.key, err: (err as Error).message }, 'undecodable NodeSpec ignored');
      }
    }
    for (const id of [...this.nodes.keys()]) if (!seen.has(id)) this.nodes.delete(id);
  }

  /** Follow the io-engines' liveness keys: present = online (with endpoints), gone = offline. */
  async watchLiveness(): Promise<void> {
    const prefix = nodeLivenessPrefix(this.space);
    const { kvs, revision } = await this.store.range(prefix);
    for (const kv of kvs) this.setLive(kv.key.slice(prefix.length), kv.value);
    this.livenessWatch = await this.store.watch(prefix, { fromRevision: revision + 1 });
    this.livenessWatch.on('event', (e) => {
      if (e.type === 'put') this.setLive(e.kv.key.slice(prefix.length), e.kv.value);
      else this.setOffline(e.key.slice(prefix.length));
    });
    this.livenessWatch.on('error', (err) => this.log.warn({ err: err.message }, 'liveness watch error'));
    this.livenessWatch.on('compacted', () => {
      this.log.warn('liveness watch compacted; re-listing');
      // A failed re-list (store down) is retried later instead of crashing core.
      const relist = (): void => {
        void this.livenessWatch
          ?.close()
          .then(() => this.watchLiveness())
          .catch((err: Error) => {
            this.log.warn({ err: err.message }, 'liveness re-list failed; retrying');
            setTimeout(relist, 1000).unref();
          });
      };
      relist();
    });
  }

  private setLive(node: string, value: string): void {
    let v: { grpcEndpoint?: string; nbdEndpoint?: string; startedAt?: string } = {};
    try {
      v = JSON.parse(value);
    } catch {
      // a liveness key with an unreadable value still says the node is alive
    }
    const prev = this.nodeLive.get(node);
    const startedAt = v.startedAt ?? null;
    // A restarted io-engine (seen offline first, or re-registered with a new start time) has none
    // of the state polled from the previous process.
    const newProcess = !!prev?.startedAt && !!startedAt && prev.startedAt !== startedAt;
    const restarted = !prev?.online || newProcess;
    if (restarted) this.forgetPolled(node);
    // A new process's pools are not known until it is polled (it may not have them again); a node
    // back with the same process (its lease lapsed in a store outage) still has the ones it had.
    if (newProcess) for (const p of this.pools.values()) if (p.node === node) this.poolStates.delete(p.id);
    this.nodeLive.set(node, {
      online: true,
      grpcEndpoint: v.grpcEndpoint ?? null,
      nbdEndpoint: v.nbdEndpoint ?? null,
      offlineSince: 0,
      startedAt,
    });
    if (restarted) this.onNodeChange(node, true);
  }

  private setOffline(node: string): void {
    const prev = this.nodeLive.get(node);
    this.nodeLive.set(node, {
      online: false,
      grpcEndpoint: prev?.grpcEndpoint ?? null,
      nbdEndpoint: prev?.nbdEndpoint ?? null,
      offlineSince: performance.now(),
      startedAt: prev?.startedAt ?? null,
    });
    if (prev?.online) {
      this.forgetPolled(node);
      this.onNodeChange(node, false);
    }
  }

  /**
   * Drop a node's polled replica, nexus and pool-presence state at once, rather than at the next
   * poll: until then a target on a dead or restarted io-engine would still read Online (and a
   * reconciler would not see its nexus missing). A poll already under way is discarded too.
   */
  private forgetPolled(node: string): void {
    this.touch(node);
    this.replicaStates.delete(node);
    this.nexusStates.delete(node);
    this.polledPools.delete(node);
  }

  isOnline(node: string): boolean {
    return this.nodeLive.get(node)?.online ?? false;
  }

  /** How long a node has been offline (ms); nodes never seen count from core start. */
  offlineFor(node: string): number {
    const l = this.nodeLive.get(node);
    if (l?.online) return 0;
    return performance.now() - (l?.offlineSince || this.startedAt);
  }

  async close(): Promise<void> {
    await this.livenessWatch?.close();
  }

  /**
   * Exclusive in-memory guard of one resource (Mayastor OperationSequence): busy → 409, or the error
   * `busyAs` makes (the dirty-spec reconciler: a request meanwhile is told StoreDirty, 507).
   */
  async exclusive<T>(
    resource: string,
    id: string,
    fn: () => Promise<T>,
    busyAs?: () => SvcError,
  ): Promise<T> {
    const k = `${resource}/${id}`;
    if (this.busySet.has(k)) throw (this.busySet.get(k) ?? (() => busy(resource, id)))();
    this.busySet.set(k, busyAs);
    try {
      return await fn();
    } finally {
      this.busySet.delete(k);
    }
  }

  isBusy(resource: string, id: string): boolean {
    return this.busySet.has(`${resource}/${id}`);
  }

  // --- persistence: write through the lease guard, then update the cache -------------------------

  async persist(change: {
    volumes?: VolumeSpec[];
    replicas?: ReplicaSpec[];
    pools?: PoolSpec[];
    nexuses?: NexusSpec[];
    nodes?: NodeSpec[];
    snapshots?: VolumeSnapshot[];
    deleteVolumes?: string[];
    deleteReplicas?: string[];
    deletePools?: string[];
    deleteNexuses?: string[];
    deleteSnapshots?: string[];
    deleteKeys?: string[];
    deletePrefixes?: string[];
    events?: CoreEvent[];
  }): Promise<void> {
    // Each object is encoded once, and the text decoded back before anything is written: a value
    // the codecs would refuse at load never reaches the store (the write fails instead), and the
    // decoded copy becomes the cache (callers keep mutating their working copy; the cache equals
    // what a restart loads).
    const puts: { key: string; value: string }[] = [];
    const encode = <T>(codec: SpecCodec<T>, v: T): T => {
      const key = this.key(codec.type, codec.idOf(v)!);
      const value = codec.encode(v);
      puts.push({ key, value });
      try {
        return codec.decode(key, value);
      } catch (err) {
        throw new SvcError('Internal', `core built an invalid ${codec.type}: ${(err as Error).message}`);
      }
    };
    const volumes = (change.volumes ?? []).map((v) => encode(volumeSpec, v));
    const replicas = (change.replicas ?? []).map((r) => encode(replicaSpec, r));
    const pools = (change.pools ?? []).map((p) => encode(poolSpec, p));
    const nexuses = (change.nexuses ?? []).map((n) => encode(nexusSpec, n));
    const nodes = (change.nodes ?? []).map((n) => encode(nodeSpec, n));
    const snapshots = (change.snapshots ?? []).map((s) => encode(volumeSnapshot, s));
    const deletes = [
      ...(change.deleteVolumes ?? []).map((id) => this.key('VolumeSpec', id)),
      ...(change.deleteReplicas ?? []).map((id) => this.key('ReplicaSpec', id)),
      ...(change.deletePools ?? []).map((id) => this.key('PoolSpec', id)),
      ...(change.deleteNexuses ?? []).map((id) => this.key('NexusSpec', id)),
      ...(change.deleteSnapshots ?? []).map((id) => this.key('VolumeSnapshot', id)),
      ...(change.deleteKeys ?? []),
    ];
    for (const e of change.events ?? []) puts.push({ key: eventKey(this.space), value: JSON.stringify(e) });
    try {
      await this.writer.write(puts, deletes, change.deletePrefixes);
    } catch (err) {
      if (isUnansweredWrite(err)) this.adoptPendingCreates(volumes, replicas, nexuses, snapshots);
      throw err;
    }
    for (const v of volumes) this.volumes.set(v.uuid, v);
    for (const r of replicas) this.setReplica(r);
    for (const p of pools) this.pools.set(p.id, p);
    for (const n of nexuses) this.nexuses.set(n.uuid, n);
    for (const n of nodes) this.nodes.set(n.id, n);
    for (const s of snapshots) this.setSnapshot(s);
    for (const id of change.deleteVolumes ?? []) this.volumes.delete(id);
    for (const id of change.deleteReplicas ?? []) this.deleteReplica(id);
    for (const id of change.deletePools ?? []) this.pools.delete(id);
    for (const id of change.deleteNexuses ?? []) this.nexuses.delete(id);
    for (const id of change.deleteSnapshots ?? []) this.deleteSnapshot(id);
  }

  /**
   * After a write whose outcome is unknown (the store did not answer: etcd may still apply it), the
   * new specs it carried with their Create pending are taken as written. Left out, one that landed
   * would sit in the store, Creating, unknown to this core until it restarts; taken in, the
   * dirty-spec reconciler rolls each back once the store answers (its result is unknown), whether
   * the write landed or not. Specs that existed keep the version this core wrote last: its next
   * write of them replaces whatever landed.
   */
  private adoptPendingCreates(
    volumes: VolumeSpec[],
    replicas: ReplicaSpec[],
    nexuses: NexusSpec[],
    snapshots: VolumeSnapshot[],
  ): void {
    for (const v of volumes) if (v.operation && !this.volumes.has(v.uuid)) this.volumes.set(v.uuid, v);
    for (const r of replicas) if (r.operation && !this.replicas.has(r.uuid)) this.setReplica(r);
    for (const n of nexuses) if (n.operation && !this.nexuses.has(n.uuid)) this.nexuses.set(n.uuid, n);
    for (const s of snapshots)
      if (s.metadata.operation && !this.snapshots.has(s.spec.uuid)) this.setSnapshot(s);
  }

  private indexReplica(r: ReplicaSpec | undefined, add: boolean): void {
    if (!r) return;
    if (add) this.replicasByVolume.add(r.owners.volume, r);
    else this.replicasByVolume.remove(r.owners.volume, r.uuid);
  }

  private setSnapshot(s: VolumeSnapshot): void {
    this.deleteSnapshot(s.spec.uuid);
    this.snapshots.set(s.spec.uuid, s);
    this.snapshotsByVolume.add(s.spec.source_id, s);
  }

  private deleteSnapshot(id: string): void {
    this.snapshotsByVolume.remove(this.snapshots.get(id)?.spec.source_id, id);
    this.snapshots.delete(id);
  }

  /** Per pool: bytes and replicas committed by replica specs, kept in step so scheduling is O(pools). */
  private readonly committedByPool = new Map<string, { size: number; count: number }>();

  /** What each replica was counted as (a spec edited in place is still uncounted correctly). */
  private readonly countedAs = new Map<string, { pool: string; size: number }>();

  private countReplica(r: ReplicaSpec | undefined, sign: 1 | -1): void {
    if (!r) return;
    const was = this.countedAs.get(r.uuid);
    if (sign === -1 && !was) return;
    const at = sign === 1 ? { pool: poolRefName(r.pool), size: r.size } : was!;
    if (sign === 1) {
      if (was) this.countReplica(r, -1);
      this.countedAs.set(r.uuid, at);
    } else this.countedAs.delete(r.uuid);
    const c = this.committedByPool.get(at.pool) ?? { size: 0, count: 0 };
    c.size += sign * at.size;
    c.count += sign;
    if (c.count === 0) this.committedByPool.delete(at.pool);
    else this.committedByPool.set(at.pool, c);
  }

  private setReplica(r: ReplicaSpec): void {
    const old = this.replicas.get(r.uuid);
    this.indexReplica(old, false);
    this.countReplica(old, -1);
    this.replicas.set(r.uuid, r);
    this.indexReplica(r, true);
    this.countReplica(r, 1);
  }

  private deleteReplica(id: string): void {
    const old = this.replicas.get(id);
    this.indexReplica(old, false);
    this.countReplica(old, -1);
    this.replicas.delete(id);
  }

  // --- derived views --------------------------------------------------------------------------------

  volume(id: string): VolumeSpec {
    const v = this.volumes.get(id);
    if (!v) throw notFound('volume', id);
    return cloneSpec(v);
  }

  volumeReplicas(volumeId: string): ReplicaSpec[] {
    return this.replicasByVolume.of(volumeId);
  }

  /** The snapshots taken of a volume. */
  volumeSnapshots(volumeId: string): VolumeSnapshot[] {
    return this.snapshotsByVolume.of(volumeId);
  }

  volumeNexuses(volumeId: string): NexusSpec[] {
    return [...this.nexuses.values()].filter((n) => n.owner === volumeId);
  }

  replicaNode(r: ReplicaSpec): string | undefined {
    return this.pools.get(poolRefName(r.pool))?.node;
  }

  /** What its io-engine reported of a replica at the last poll (none: not polled, or not there). */
  replicaState(r: ReplicaSpec): ReplicaState | undefined {
    return this.replicaStates.get(this.replicaNode(r) ?? '')?.get(r.uuid);
  }

  nodeViews(): NodeView[] {
    const ids = new Set([...this.nodes.keys(), ...this.nodeLive.keys()]);
    return [...ids].map((id) => {
      const spec = this.nodes.get(id);
      return {
        id,
        online: this.isOnline(id),
        cordoned: spec ? isCordoned(spec) : false,
        labels: spec?.labels ?? {},
      };
    });
  }

  poolViews(): PoolView[] {
    const committed = this.committedByPool;
    return [...this.pools.values()].map((p) => {
      const st = this.poolStates.get(p.id);
      return {
        id: p.id,
        node: p.node,
        labels: p.labels ?? {},
        online: st?.status === 'Online' && this.isOnline(p.node),
        answering: !this.unanswering.has(p.node),
        capacity: st?.capacity ?? 0,
        used: st?.used ?? 0,
        committed: committed.get(p.id)?.size ?? 0,
        replicaCount: committed.get(p.id)?.count ?? 0,
      };
    });
  }
}
