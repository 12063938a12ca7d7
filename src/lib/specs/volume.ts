/**
 * VolumeSpec, key `VolumeSpec/<volume-uuid>` (docs/mayastor-compat.md §1.6).
 * Status `{"Created":"Online"}` (VolumeStatus, no rename); optional tail fields `content_source`,
 * `metadata`, `max_snapshots` are left out when none, as Mayastor does.
 */
import {
  array,
  bool,
  type Codec,
  nullable,
  record,
  string,
  tagged,
  tuple,
  u8,
  u32,
  u64,
  uuid,
} from './codec.js';
import {
  CONTROLLER_ID_MAX,
  CONTROLLER_ID_MIN,
  defaultNvmfConfig,
  type Labels,
  labels,
  type NexusNvmfConfig,
  type NexusStatus,
  nexusNvmfConfig,
  nexusStatus,
  type OperationRecord,
  operationRecord,
  type ShareProtocol,
  type SpecStatus,
  shareProtocol,
  specCodec,
  specStatus,
} from './common.js';
import { nvmeNqn } from './nqn.js';
import { field, optional, struct } from './struct.js';

export type VolumeStatus = NexusStatus;

export interface VolumePolicy {
  self_heal: boolean;
}

export interface LabelledTopology {
  exclusion: Record<string, string>;
  inclusion: Record<string, string>;
  creation_affinity_keys: string[] | null;
}

export interface ExplicitNodeTopology {
  allowed_nodes: string[];
  preferred_nodes: string[];
}

export type NodeTopology = { Explicit: ExplicitNodeTopology } | { Labelled: LabelledTopology };
export type PoolTopology = { Labelled: LabelledTopology };

export interface Topology {
  node: NodeTopology | null;
  pool: PoolTopology | null;
}

export interface InitiatorAC {
  node_name: string;
  node_nqn: string;
}

export interface FrontendConfig {
  host_acl: InitiatorAC[];
}

/** Rust `TargetConfig` with `VolumeTarget` flattened into it: the last (or current) target. */
export interface TargetConfig {
  node: string;
  nexus: string;
  protocol: ShareProtocol | null;
  /** False after unpublish: the config is kept for inspection. */
  active: boolean;
  config: NexusNvmfConfig;
  frontend: FrontendConfig;
}

export interface PublishOperation {
  config: TargetConfig;
  publish_context: Record<string, string>;
}

export type VolumeOperation =
  | 'Create'
  | 'Destroy'
  | { Share: ShareProtocol }
  | 'Unshare'
  | { SetReplica: number }
  /** Legacy publish: [node, nexus, protocol]. */
  | { Publish: [string, string, ShareProtocol | null] }
  | { Publish2: PublishOperation }
  | { Republish: { config: TargetConfig } }
  | 'Unpublish'
  | { RemoveUnusedReplica: string }
  | { CreateSnapshot: string }
  | { DestroySnapshot: string }
  | { Resize: number }
  | { SetVolumeProperty: { MaxSnapshots: number } };

/** `{"Snapshot":[snapshot-uuid, source-volume-uuid]}`: the volume is a restore of a snapshot. */
export type VolumeContentSource = { Snapshot: [string, string] };

export interface VolumeMetadata {
  persisted: { snapshot_as_thin: boolean | null };
}

export interface VolumeSpec {
  uuid: string;
  size: number;
  labels: Labels | null;
  num_replicas: number;
  status: SpecStatus<VolumeStatus>;
  policy: VolumePolicy;
  topology: Topology | null;
  last_nexus_id: string | null;
  operation: OperationRecord<VolumeOperation> | null;
  thin: boolean;
  content_source?: VolumeContentSource;
  /** Rust field `target_config`. */
  target: TargetConfig | null;
  publish_context: Record<string, string> | null;
  affinity_group: { id: string } | null;
  metadata?: VolumeMetadata;
  max_snapshots?: number;
}

const stringMap = record(string);

const labelledTopology = struct<LabelledTopology>('LabelledTopology', {
  exclusion: field(stringMap, { default: () => ({}) }),
  inclusion: field(stringMap, { default: () => ({}) }),
  creation_affinity_keys: field(nullable(array(string))),
});

export const topology = struct<Topology>('Topology', {
  node: field(
    nullable(
      tagged<NodeTopology>({
        Explicit: struct<ExplicitNodeTopology>('ExplicitNodeTopology', {
          allowed_nodes: field(array(string), { default: () => [] }),
          preferred_nodes: field(array(string), { default: () => [] }),
        }),
        Labelled: labelledTopology,
      }),
    ),
  ),
  pool: field(nullable(tagged<PoolTopology>({ Labelled: labelledTopology }))),
});

// node_nqn is upstream's HostNqn, whose deserializer refuses a value that is not an NQN.
const initiatorAC = struct<InitiatorAC>('InitiatorAC', {
  node_name: field(string),
  node_nqn: field(nvmeNqn),
});

export const targetConfig = struct<TargetConfig>('TargetConfig', {
  node: field(string),
  nexus: field(uuid),
  protocol: field(nullable(shareProtocol)),
  active: field(bool, { default: () => true }),
  config: field(nexusNvmfConfig, { default: defaultNvmfConfig }),
  frontend: field(struct<FrontendConfig>('FrontendConfig', { host_acl: field(array(initiatorAC)) }), {
    default: () => ({ host_acl: [] }),
  }),
});

const volumeOperation = tagged<VolumeOperation>({
  Create: null,
  Destroy: null,
  Share: shareProtocol,
  Unshare: null,
  SetReplica: u8,
  Publish: tuple(string, uuid, nullable(shareProtocol)),
  Publish2: struct<PublishOperation>('PublishOperation', {
    config: field(targetConfig),
    publish_context: field(stringMap),
  }),
  Republish: struct<{ config: TargetConfig }>('RepublishOperation', { config: field(targetConfig) }),
  Unpublish: null,
  RemoveUnusedReplica: uuid,
  CreateSnapshot: uuid,
  DestroySnapshot: uuid,
  Resize: u64,
  SetVolumeProperty: tagged<{ MaxSnapshots: number }>({ MaxSnapshots: u32 }),
});

export const volumeSpecCodec: Codec<VolumeSpec> = struct<VolumeSpec>('VolumeSpec', {
  uuid: field(uuid),
  size: field(u64),
  labels: field(nullable(labels)),
  num_replicas: field(u8),
  status: field(specStatus(nexusStatus)),
  policy: field(struct<VolumePolicy>('VolumePolicy', { self_heal: field(bool, { default: () => true }) }), {
    default: () => ({ self_heal: true }),
  }),
  topology: field(nullable(topology)),
  last_nexus_id: field(nullable(uuid)),
  operation: field(nullable(operationRecord('VolumeOperationState', volumeOperation))),
  thin: field(bool, { default: () => false }),
  content_source: optional(tagged<VolumeContentSource>({ Snapshot: tuple(uuid, uuid) })),
  target: field(nullable(targetConfig)),
  publish_context: field(nullable(stringMap)),
  affinity_group: field(nullable(struct<{ id: string }>('AffinityGroup', { id: field(string) }))),
  metadata: optional(
    struct<VolumeMetadata>('VolumeMetadata', {
      persisted: field(
        struct<VolumeMetadata['persisted']>('VolumePersistedMetadata', {
          snapshot_as_thin: field(nullable(bool)),
        }),
        { default: () => ({ snapshot_as_thin: null }) },
      ),
    }),
    (m) => m.persisted.snapshot_as_thin === null,
  ),
  max_snapshots: optional(u32),
});

export const volumeSpec = specCodec<VolumeSpec>('VolumeSpec', volumeSpecCodec, 'uuid', (v) => v.uuid);

// ---------------------------------------------------------------------------------------------
// Accessors

/** The target IO goes to right now: the stored target when active, else null. */
export function activeTarget(v: VolumeSpec): TargetConfig | null {
  return v.target?.active ? v.target : null;
}

/** Node of the active target, or null when unpublished. */
export function volumeTargetNode(v: VolumeSpec): string | null {
  return activeTarget(v)?.node ?? null;
}

/** Protocol of the active target, or null when unpublished / not shared. */
export function volumeTargetProtocol(v: VolumeSpec): ShareProtocol | null {
  return activeTarget(v)?.protocol ?? null;
}

/** Nexus of the active target, or null when unpublished. */
export function volumeNexusId(v: VolumeSpec): string | null {
  return activeTarget(v)?.nexus ?? null;
}

/** Nexus whose NexusInfo holds the replicas' health: `last_nexus_id`, else the (last) target's nexus. */
export function healthInfoNexusId(v: VolumeSpec): string | null {
  return v.last_nexus_id ?? v.target?.nexus ?? null;
}

/** Hosts allowed to connect to the target (node names of the frontend ACL). */
export function frontendNodes(v: VolumeSpec): string[] {
  return v.target?.frontend.host_acl.map((h) => h.node_name) ?? [];
}

/** Replica count wanted: the pending `SetReplica` count, else `num_replicas`. */
export function desiredNumReplicas(v: VolumeSpec): number {
  const op = v.operation?.operation;
  return op && typeof op === 'object' && 'SetReplica' in op ? op.SetReplica : v.num_replicas;
}

/** Source snapshot of a restored volume: [snapshot uuid, source volume uuid], or null. */
export function volumeContentSource(v: VolumeSpec): [string, string] | null {
  return v.content_source?.Snapshot ?? null;
}

// ---------------------------------------------------------------------------------------------
// Builders

/** Prefix of every NQN Mayastor builds. */
export const NQN_PREFIX = 'nqn.2019-05.io.openebs';

/** A node's host NQN, as the frontend ACL names it (`nqn.2019-05.io.openebs:node-name:<node>`). */
export function hostNqn(node: string): string {
  return `${NQN_PREFIX}:node-name:${node}`;
}

/** The low 64 bits of a uuid: Mayastor's reservation key for a nexus. */
export function reservationKeyOf(nexusUuid: string): bigint {
  const hex = nexusUuid.replace(/-/g, '').slice(16);
  return BigInt(`0x${hex}`);
}

/**
 * The next target's controller-id range: 2 ids after the previous target's (wrapping to the start),
 * so an old and a new target never share controller ids (1..=2 for the first target).
 */
export function nextControllerIdRange(previous: TargetConfig | null): NexusNvmfConfig['controllerIdRange'] {
  const start = previous ? previous.config.controllerIdRange.end + 1 : CONTROLLER_ID_MIN;
  return start + 1 > CONTROLLER_ID_MAX
    ? { start: CONTROLLER_ID_MIN, end: CONTROLLER_ID_MIN + 1 }
    : { start, end: start + 1 };
}

/** A new volume target, as Mayastor builds one at each publish or republish (a new nexus each time). */
export function newTargetConfig(o: {
  node: string;
  nexus: string;
  protocol: ShareProtocol | null;
  /** The node the volume is used from (the frontend ACL); none = any host. */
  frontendNode?: string;
  previous: TargetConfig | null;
}): TargetConfig {
  return {
    node: o.node,
    nexus: o.nexus,
    protocol: o.protocol,
    active: true,
    config: {
      controllerIdRange: nextControllerIdRange(o.previous),
      reservationKey: reservationKeyOf(o.nexus),
      reservationType: 'ExclusiveAccess',
      preemptPolicy: 'Holder',
    },
    frontend: {
      host_acl: o.frontendNode ? [{ node_name: o.frontendNode, node_nqn: hostNqn(o.frontendNode) }] : [],
    },
  };
}
