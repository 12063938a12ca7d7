import type { ReplicaSpec, VolumeSpec } from '../../src/lib/specs/index.js';

/**
 * A managed, online 4 MiB thin ReplicaSpec as core stores one, owned by `owner` (a volume id, or
 * null): what a test writes straight into the store to leave a replica as a crash would.
 */
export function managedReplicaSpec(uuid: string, pool: string, owner: string | null): ReplicaSpec {
  return {
    name: uuid,
    uuid,
    size: 4 * 1024 * 1024,
    pool,
    share: 'none',
    thin: true,
    status: { Created: 'online' },
    managed: true,
    owners: { volume: owner, disown_all: false },
    operation: null,
    allowed_hosts: [],
  };
}

/**
 * A created, unpublished 1 MiB thick VolumeSpec with 1 replica as core stores one, with `over`
 * replacing fields: what a test writes straight into the store (`volumeSpec.encode` it, or
 * `JSON.stringify` it when it holds nothing beyond JSON).
 */
export function createdVolumeSpec(uuid: string, over: Partial<VolumeSpec> = {}): VolumeSpec {
  return {
    uuid,
    size: 1048576,
    labels: null,
    num_replicas: 1,
    status: { Created: 'Online' },
    policy: { self_heal: true },
    topology: null,
    last_nexus_id: null,
    operation: null,
    thin: false,
    target: null,
    publish_context: null,
    affinity_group: null,
    ...over,
  };
}
