import type { BlockDevice } from '../../lib/rest/types.js';

/**
 * What core needs from one io-engine, in core's own terms. engine-grpc.ts implements it over the
 * io-engine client (lib/io-engine); keeping the seam here lets scheduling and operation code stay readable.
 */
export interface PoolState {
  id: string;
  /** The pool's uuid, fixed at creation (replica snapshots name their pool by it). */
  uuid: string;
  disk: string;
  capacity: number;
  used: number;
  /** Bytes still available for thick allocation (capacity less thick sizes and thin allocation). */
  free: number;
  status: 'Online' | 'Degraded' | 'Faulted' | 'Unknown';
  /** Why it is not Online, as its io-engine says (its disk's last error). */
  reason?: string;
}

export interface ReplicaState {
  uuid: string;
  pool: string;
  size: number;
  thin: boolean;
  share: string;
  /** URI a nexus on another node uses to reach this replica ('' when not shared). */
  uri: string;
  allocated?: number;
}

export interface ChildState {
  uri: string;
  state: string;
  rebuildProgress?: number | null;
  /** The current or last rebuild is partial (from the io-engine's rebuild map). */
  rebuildPartial?: boolean;
  /** Bytes of data the current or last rebuild wrote to it (zero stretches are zeroed, not sent). */
  rebuildTransferredBytes?: number;
  /** While Faulted: when the io-engine faulted it (ms since the epoch). */
  faultedAt?: number | null;
  /** While Faulted: why, as the io-engine says (e.g. the I/O error its replica answered). */
  reason?: string;
  /** When the current or last rebuild started and ended (ms since the epoch, the io-engine's clock). */
  rebuildStartedAt?: number | null;
  rebuildEndedAt?: number | null;
}

export interface NexusState {
  uuid: string;
  size: number;
  state: string;
  children: ChildState[];
  deviceUri: string;
  protocol: string;
  /** Why the nexus shut itself down, when it did. */
  shutdownReason?: string;
}

export interface SnapshotState {
  uuid: string;
  replicaUuid: string;
  name: string;
  size: number;
  /** Bytes it holds on disk: its replica's allocation when taken. */
  allocated: number;
}

export interface EngineApi {
  readonly nodeId: string;
  listPools(): Promise<PoolState[]>;
  createPool(id: string, disk: string, capacity?: number): Promise<PoolState>;
  importPool(id: string, disk: string): Promise<PoolState>;
  destroyPool(id: string): Promise<void>;
  listReplicas(): Promise<ReplicaState[]>;
  getReplica(uuid: string): Promise<ReplicaState>;
  createReplica(r: { uuid: string; pool: string; size: number; thin: boolean }): Promise<ReplicaState>;
  destroyReplica(uuid: string, pool: string): Promise<void>;
  /** Share a replica so a nexus on another node can use it; returns its URI. */
  shareReplica(uuid: string): Promise<string>;
  /** URI of a replica as a child of a nexus on the same node. */
  resizeReplica(uuid: string, size: number): Promise<void>;
  listNexuses(): Promise<NexusState[]>;
  getNexus(uuid: string): Promise<NexusState>;
  createNexus(n: {
    uuid: string;
    size: number;
    children: string[];
    nexusInfoKey: string;
    volumeId?: string;
  }): Promise<NexusState>;
  destroyNexus(uuid: string): Promise<void>;
  /** Share the nexus over `protocol`; returns the target URI. */
  publishNexus(uuid: string, protocol: string): Promise<string>;
  unpublishNexus(uuid: string): Promise<void>;
  addChild(nexus: string, uri: string): Promise<NexusState>;
  removeChild(nexus: string, uri: string): Promise<void>;
  resizeNexus(uuid: string, size: number): Promise<void>;
  /** Hold a nexus's I/O (ended by releaseNexusIo, or by the io-engine after `timeoutMs`). */
  holdNexusIo(uuid: string, timeoutMs: number): Promise<string>;
  /** NotFound when the hold already ended by its timeout. */
  releaseNexusIo(uuid: string, holdId: string): Promise<void>;
  createReplicaSnapshot(replica: string, snapshotUuid: string, name: string): Promise<SnapshotState>;
  /** `pool`: the pool that holds it (a pool not imported answers Unavailable, not NotFound). */
  destroyReplicaSnapshot(snapshotUuid: string, pool: string): Promise<void>;
  /** A new (thin) replica holding a replica snapshot's content, in the snapshot's pool. */
  createSnapshotClone(snapshotUuid: string, cloneUuid: string): Promise<ReplicaState>;
  close(): void;
  /** Stop exporting a shared replica (it stays usable as a local child). */
  unshareReplica(uuid: string): Promise<void>;
  /** The node's block devices (Mayastor BlockDevice fields); `all` false lists only available ones. */
  listBlockDevices(all: boolean): Promise<BlockDeviceState[]>;
}

/** A block device of a node as REST `/nodes/{node}/block_devices` shows it. */
export type BlockDeviceState = BlockDevice;
