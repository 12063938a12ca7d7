/**
 * NexusSpec, key `NexusSpec/<nexus-uuid>` (docs/mayastor-compat.md §1.9). The status field is named
 * `spec_status` here (not `status`); children are `{"Replica":{uuid, share_uri}}` or `{"Uri": uri}`.
 */
import { localReplicaUri, replicaUuidOfUri } from '../child-uri.js';
import { array, bool, type Codec, nullable, string, tagged, tuple, u64, uuid } from './codec.js';
import {
  type NexusNvmfConfig,
  type NexusStatus,
  nexusNvmfConfig,
  nexusStatus,
  type OperationRecord,
  operationRecord,
  type Protocol,
  protocol,
  type ShareProtocol,
  type SpecStatus,
  shareProtocol,
  specCodec,
  specStatus,
} from './common.js';
import { field, struct } from './struct.js';

export interface ReplicaUri {
  uuid: string;
  share_uri: string;
}

export type NexusChild = { Replica: ReplicaUri } | { Uri: string };

export type NexusOwnerUpdate = 'None' | { Volume: string } | 'All';

export type NexusOperation =
  | 'Create'
  | 'Destroy'
  | 'Shutdown'
  | { Share: [ShareProtocol, string[]] }
  | 'Unshare'
  | { AddChild: NexusChild }
  | { RemoveChild: NexusChild }
  | { OwnerUpdate: NexusOwnerUpdate }
  | { Resize: number };

export interface NexusStatusInfo {
  shutdown_failed: boolean;
}

export interface NexusSpec {
  uuid: string;
  /** The owning volume's uuid when owned, else the nexus uuid. */
  name: string;
  node: string;
  children: NexusChild[];
  size: number;
  spec_status: SpecStatus<NexusStatus>;
  share: Protocol;
  managed: boolean;
  /** Owning volume. */
  owner: string | null;
  operation: OperationRecord<NexusOperation> | null;
  nvmf_config: NexusNvmfConfig | null;
  status_info: NexusStatusInfo;
  allowed_hosts: string[];
}

export const nexusChild: Codec<NexusChild> = tagged<NexusChild>({
  Replica: struct<ReplicaUri>('ReplicaUri', { uuid: field(uuid), share_uri: field(string) }),
  Uri: string,
});

const nexusOperation = tagged<NexusOperation>({
  Create: null,
  Destroy: null,
  Shutdown: null,
  Share: tuple(shareProtocol, array(string)),
  Unshare: null,
  AddChild: nexusChild,
  RemoveChild: nexusChild,
  OwnerUpdate: tagged<NexusOwnerUpdate>({ None: null, Volume: uuid, All: null }),
  Resize: u64,
});

export const nexusSpecCodec: Codec<NexusSpec> = struct<NexusSpec>('NexusSpec', {
  uuid: field(uuid),
  name: field(string),
  node: field(string),
  children: field(array(nexusChild)),
  size: field(u64),
  spec_status: field(specStatus(nexusStatus)),
  share: field(protocol),
  managed: field(bool),
  owner: field(nullable(uuid)),
  operation: field(nullable(operationRecord('NexusOperationState', nexusOperation))),
  nvmf_config: field(nullable(nexusNvmfConfig)),
  status_info: field(struct<NexusStatusInfo>('NexusStatusInfo', { shutdown_failed: field(bool) }), {
    default: () => ({ shutdown_failed: false }),
  }),
  allowed_hosts: field(array(string), { default: () => [] }),
});

export const nexusSpec = specCodec<NexusSpec>('NexusSpec', nexusSpecCodec, 'uuid', (n) => n.uuid);

/** The child's URI: the replica's share URI, or the plain URI. */
export function childUri(child: NexusChild): string {
  return 'Replica' in child ? child.Replica.share_uri : child.Uri;
}

/** The replica a child stands for, when it is a replica child. */
export function childReplicaId(child: NexusChild): string | null {
  return 'Replica' in child ? child.Replica.uuid : null;
}

/** The replica a child stands for: a replica child's uuid, else the replica its URI names. */
export function childReplicaUuid(child: NexusChild): string | null {
  return 'Replica' in child ? child.Replica.uuid : replicaUuidOfUri(child.Uri);
}

/** Uuids of the nexus's replica children. */
export function nexusReplicaIds(n: NexusSpec): string[] {
  return n.children.map(childReplicaId).filter((id): id is string => id !== null);
}

/** Local child URI of a replica on the nexus's own node. */
export const localChildUri = localReplicaUri;

/** Remote child URI of a replica shared over NVMe-oF at `host` (ip or ip:port; port 8420 by default). */
export function nvmfChildUri(host: string, replicaId: string): string {
  const addr = host.includes(':') ? host : `${host}:8420`;
  return `nvmf://${addr}/nqn.2019-05.io.openebs:${replicaId}?uuid=${replicaId}`;
}
