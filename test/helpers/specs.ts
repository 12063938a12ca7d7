import type { ReplicaSpec } from '../../src/lib/specs/index.js';

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
