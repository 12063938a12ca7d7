/**
 * REST v0 bodies as core answers them (docs/mayastor-compat.md §2), the parts clients read. Checked
 * against the OpenAPI document core serves (src/daemons/core/rest/openapi.ts) by
 * test/unit/rest/types-openapi.test.ts: a field is non-optional here only where the document requires it.
 */

export interface Volume {
  spec: {
    uuid: string;
    size: number;
    num_replicas: number;
    status: 'Creating' | 'Created' | 'Deleting' | 'Deleted';
    operation?: { operation: string; result?: boolean };
    target?: { node: string; protocol?: string; frontend_nodes?: { name: string; nqn: string }[] };
    policy: { self_heal: boolean };
    thin: boolean;
    labels?: Record<string, string>;
    num_snapshots?: number;
    [k: string]: unknown;
  };
  state: {
    uuid: string;
    size: number;
    status: 'Unknown' | 'Online' | 'Degraded' | 'Faulted' | 'Shutdown';
    target?: Nexus;
    replica_topology: Record<
      string,
      {
        node?: string;
        pool?: string;
        state: string;
        'child-status'?: string;
        'rebuild-progress'?: number;
        usage?: { capacity: number; allocated: number; allocated_snapshots: number };
      }
    >;
    usage?: {
      capacity: number;
      allocated: number;
      allocated_replica: number;
      total_allocated: number;
      total_allocated_replicas: number;
    };
  };
}

export interface Nexus {
  uuid: string;
  node: string;
  size: number;
  state: string;
  protocol: string;
  deviceUri: string;
  rebuilds: number;
  children: { uri: string; state: string; rebuildProgress?: number }[];
  /** storctl's: why a Shutdown nexus shut itself down. */
  shutdown_reason?: string;
}

export interface Node {
  id: string;
  spec?: {
    id: string;
    grpcEndpoint: string;
    labels?: Record<string, string>;
    cordondrainstate?: {
      cordonedstate?: { cordonlabels: string[] };
      drainingstate?: { cordonlabels: string[]; drainlabels: string[] };
      drainedstate?: { cordonlabels: string[]; drainlabels: string[] };
    };
  };
  state: {
    id: string;
    grpcEndpoint: string;
    nbdEndpoint?: string;
    status: 'Online' | 'Offline' | 'Unknown';
    cordoned: boolean;
  };
}

export interface Pool {
  id: string;
  spec?: { id: string; node: string; disks: string[]; labels?: Record<string, string>; status: string };
  state?: {
    id: string;
    node: string;
    disks: string[];
    status: string;
    capacity: number;
    used: number;
    committed?: number;
  };
}

export interface Replica {
  uuid: string;
  node?: string;
  pool: string;
  size: number;
  thin: boolean;
  share: string;
  uri: string;
  state: string;
  owner?: string;
}

/** A replica snapshot whose node is up; one whose node is down shows only its ids (`offline`). */
export interface OnlineReplicaSnapshot {
  uuid: string;
  source_id: string;
  pool_id: string;
  pool_uuid: string;
  timestamp: string;
  size: number;
  /** Its replica's allocation when taken. */
  allocated_size: number;
  /** Held by the earlier snapshots of the same replica. */
  predecessor_alloc_size: number;
}

export interface VolumeSnapshot {
  definition: {
    spec: { uuid: string; source_volume: string };
    /** `spec_size`: the source volume's size when the snapshot was taken (absent from older cores). */
    metadata: {
      status: string;
      timestamp?: string;
      size: number;
      spec_size?: number;
      total_allocated_size: number;
    };
  };
  state: {
    uuid: string;
    source_volume: string;
    ready_as_source: boolean;
    allocated_size: number;
    replica_snapshots: { online?: OnlineReplicaSnapshot; offline?: { uuid: string; source_id: string } }[];
  };
}

export interface CreateVolumeRequest {
  size: number;
  replicas: number;
  thin: boolean;
  policy: { self_heal: boolean };
  topology?: unknown;
  labels?: Record<string, string>;
  max_snapshots?: number;
}

export interface PublishRequest {
  protocol: 'nbd';
  publish_context: Record<string, string>;
  node?: string;
  republish?: boolean;
  reuse_existing?: boolean;
  frontend_node?: string;
}

/** A block device of a node as REST `/nodes/{node}/block_devices` shows it. */
export interface BlockDevice {
  devname: string;
  devtype: string;
  devmajor: number;
  devminor: number;
  model: string;
  devpath: string;
  devlinks: string[];
  /** In 512-byte sectors. */
  size: number;
  partition?: { name: string; number: number; parent: string; scheme: string; typeid: string; uuid: string };
  filesystem?: { fstype: string; label: string; uuid: string; mountpoint: string };
  available: boolean;
  connection_type: string;
  is_rotational?: boolean;
}

/** One finished rebuild of a target's child, as REST `/volumes/{id}/rebuild-history` lists it. */
export interface RebuildRecord {
  /** The rebuilt child's URI; its replica is the `?uuid=` parameter. */
  childUri: string;
  /** The child it was rebuilt from. */
  srcUri: string;
  rebuildJobState: 'Init' | 'Rebuilding' | 'Stopped' | 'Paused' | 'Failed' | 'Completed';
  /** Blocks of `blockSize` bytes. */
  blocksTotal: number;
  blocksRecovered: number;
  /** Of those, blocks of data sent (stretches of zeroes are zeroed, not sent). */
  blocksTransferred: number;
  blocksRemaining: number;
  blockSize: number;
  isPartial: boolean;
  startTime: string;
  endTime: string;
}

/** REST `/volumes/{id}/rebuild-history`: the rebuilds of the volume's current target. */
export interface RebuildHistory {
  targetUuid: string;
  records: RebuildRecord[];
}
