/** Typed shapes of the io-engine gRPC API (proto/io_engine.proto), sizes as numbers. */

export interface NodeInfo {
  nodeId: string;
  grpcEndpoint: string;
  nbdEndpoint: string;
  version: string;
  startedAt: string;
}

export interface Pool {
  name: string;
  uuid: string;
  disk: string;
  capacity: number;
  used: number;
  committed: number;
  free: number;
  state: string;
  /** Why it is not Online (its disk's last error). */
  stateReason: string;
  replicaCount: number;
  snapshotCount: number;
}

export interface Replica {
  uuid: string;
  name: string;
  pool: string;
  poolUuid: string;
  size: number;
  thin: boolean;
  share: 'none' | 'nbd';
  /** nbd://host:port/<uuid>?uuid=<uuid> when shared, else bdev:///<uuid>?uuid=<uuid>. */
  uri: string;
  allocated: number;
  snapshotSource: string;
}

export interface ReplicaSnapshot {
  uuid: string;
  name: string;
  replicaUuid: string;
  pool: string;
  size: number;
  allocated: number;
  createdAt: string;
  reflink: boolean;
}

export type ChildState = 'Online' | 'Degraded' | 'Faulted';
export type NexusState = 'Online' | 'Degraded' | 'Faulted' | 'Shutdown';

export interface NexusChild {
  uri: string;
  uuid: string;
  state: ChildState;
  reason: string;
  rebuildProgress: number;
  /** Bytes copied by the current (Degraded) or last rebuild. */
  rebuiltBytes: number;
  /** Of those, bytes of data written to the child (stretches of zeroes are zeroed, not sent). */
  rebuildTransferredBytes: number;
  /** The current or last rebuild copied only the regions written while the child was away. */
  rebuildPartial: boolean;
  /** While Faulted: when it was faulted (ms since the epoch, the io-engine's clock). */
  faultedAt: number | null;
  /** When the current or last rebuild started, and ended (null while it runs); the io-engine's clock. */
  rebuildStartedAt: number | null;
  rebuildEndedAt: number | null;
}

/** Mayastor's RebuildHistoryRecord as the io-engine reports it (blocks of blockSize bytes). */
export interface RebuildHistoryRecord {
  childUri: string;
  srcUri: string;
  state: 'Completed' | 'Failed' | 'Stopped';
  blocksTotal: number;
  blocksRecovered: number;
  blocksTransferred: number;
  blocksRemaining: number;
  blockSize: number;
  isPartial: boolean;
  startTime: string;
  endTime: string;
}

export interface Nexus {
  uuid: string;
  name: string;
  size: number;
  state: NexusState;
  children: NexusChild[];
  share: 'none' | 'nbd';
  /** Target URI (nbd://host:port/<nexus uuid>) when published, else ''. */
  deviceUri: string;
  volumeId: string;
  nexusInfoKey: string;
  rebuilds: number;
  /** Why it shut itself down (state Shutdown), else ''. */
  shutdownReason: string;
}

export interface CreateNexusOptions {
  uuid: string;
  size: number;
  children: string[];
  name?: string;
  volumeId?: string;
  nexusInfoKey?: string;
}
