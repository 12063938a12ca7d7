import { GrpcEngine } from '../../../src/daemons/core/engine-grpc.js';
import type { NexusSpec, ReplicaSpec, VolumeSpec } from '../../../src/lib/specs/index.js';
import { typePrefix } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { TestCluster } from './cluster.js';

/**
 * What must hold once core has recovered and reconciled, read straight from the store and the
 * io-engines: every volume fully created or gone, no pending operations, no orphan replicas, no
 * nexus without a volume. Returns the violations (empty = consistent) and the volume and replica
 * specs it read.
 */
export async function checkConsistency(
  cluster: TestCluster,
): Promise<{ violations: string[]; volumes: number; specs: VolumeSpec[]; replicas: ReplicaSpec[] }> {
  const store = await openStore(cluster.storeUrl);
  const space = { clusterId: cluster.clusterId, namespace: 'default' };
  const read = async <T>(type: string) =>
    (await store.range(typePrefix(space, type))).kvs.map((kv) => JSON.parse(kv.value) as T);
  const violations: string[] = [];
  try {
    const volumes = await read<VolumeSpec>('VolumeSpec');
    const replicas = await read<ReplicaSpec>('ReplicaSpec');
    const nexuses = await read<NexusSpec>('NexusSpec');
    const volById = new Map(volumes.map((v) => [v.uuid, v]));
    for (const v of volumes) {
      if (typeof v.status !== 'object')
        violations.push(`volume ${v.uuid} status ${JSON.stringify(v.status)}`);
      if (v.operation) violations.push(`volume ${v.uuid} pending ${JSON.stringify(v.operation)}`);
      const mine = replicas.filter((r) => r.owners.volume === v.uuid);
      if (mine.length !== v.num_replicas)
        violations.push(`volume ${v.uuid} has ${mine.length}/${v.num_replicas} replicas`);
      if (v.target && v.target.active !== false && !nexuses.some((n) => n.uuid === v.target!.nexus))
        violations.push(`volume ${v.uuid} target nexus has no spec`);
    }
    for (const r of replicas) {
      if (r.operation) violations.push(`replica ${r.uuid} pending`);
      if (!r.owners.volume || !volById.has(r.owners.volume))
        violations.push(`replica spec ${r.uuid} without volume`);
      if (typeof r.status !== 'object')
        violations.push(`replica ${r.uuid} status ${JSON.stringify(r.status)}`);
    }
    for (const n of nexuses) {
      const owner = n.owner ? volById.get(n.owner) : undefined;
      if (n.operation) violations.push(`nexus ${n.uuid} pending`);
      if (!owner || owner.target?.nexus !== n.uuid || owner.target.active === false)
        violations.push(`nexus spec ${n.uuid} without a volume targeting it`);
    }
    const replicaIds = new Set(replicas.map((r) => r.uuid));
    const nexusIds = new Set(nexuses.map((n) => n.uuid));
    for (const e of cluster.engines) {
      const engine = new GrpcEngine(e.node, e.grpc, 10_000);
      try {
        const onEngine = await engine.listReplicas();
        for (const r of onEngine)
          if (!replicaIds.has(r.uuid)) violations.push(`orphan replica ${r.uuid} on ${e.node}`);
        for (const n of await engine.listNexuses())
          if (!nexusIds.has(n.uuid)) violations.push(`nexus ${n.uuid} on ${e.node} without a volume`);
        for (const r of replicas.filter((x) => x.pool === `pool-${e.node}`)) {
          if (!onEngine.some((x) => x.uuid === r.uuid))
            violations.push(`replica ${r.uuid} missing on ${e.node}`);
        }
      } finally {
        engine.close();
      }
    }
    return { violations, volumes: volumes.length, specs: volumes, replicas };
  } finally {
    await store.close();
  }
}
