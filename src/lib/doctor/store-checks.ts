import { hasRecord } from '../catalog/cluster.js';
import { formatDuration } from '../cli-args.js';
import { CORE_SERVICE_KIND } from '../core-lease.js';
import { findNexusInfoOrphans } from '../orphans/nexus-info.js';
import { findNexusOrphans } from '../orphans/nexuses.js';
import { findReplicaOrphans } from '../orphans/replicas.js';
import type { StoreSnapshot } from '../orphans/snapshot.js';
import { findSwitchOverOrphans } from '../orphans/switchovers.js';
import type { Orphan } from '../orphans/types.js';
import {
  activeTarget,
  childReplicaId,
  type DecodedRecord,
  isSwitchOverDone,
  operationName,
  replicaPoolName,
  type StoreLeaseOwner,
  specStatusName,
  switchOverStageName,
} from '../specs/index.js';
import { etcdHosts } from '../store/etcd-errors.js';
import { parseKey } from '../store/keys.js';
import type { StoreAlarm } from '../store/types.js';
import { ageOfRevision, type ScannedRecord, type StoreScan } from './store-scan.js';

export const severities = ['error', 'warning'] as const;
export type Severity = (typeof severities)[number];

/** What `doctor store` checks, in the order findings are listed. */
export const storeChecks = [
  'store-alarm',
  'store-endpoint',
  'undecodable',
  'pending-operation',
  'missing-pool',
  'missing-replica',
  'missing-nexus',
  'volume-without-replicas',
  'under-replicated',
  'replica-without-owner',
  'nexus-without-owner',
  'orphan-nexus-info',
  'stale-switchover',
  'dead-lease-owner',
] as const;
export type StoreCheck = (typeof storeChecks)[number];

export interface StoreFinding {
  severity: Severity;
  check: StoreCheck;
  /** `<type>/<id>`, or the key when nothing shorter names it. */
  subject: string;
  problem: string;
  /** The command (or step) that repairs it. */
  fix: string;
  /** `doctor store --fix` repairs it (a store-only change that is safe whatever runs). */
  fixable: boolean;
  /** Store key and mod revision a fix is guarded on. */
  key?: string;
  modRevision?: number;
  /** For findings the orphan finders made: what `--fix` hands to their delete. */
  orphan?: Orphan;
}

export interface CheckInput {
  scan: StoreScan;
  snapshot: StoreSnapshot;
  /** Lease owners with whether their lease is alive (asked of the store). */
  leaseOwners: { record: ScannedRecord; value: StoreLeaseOwner; alive: boolean }[];
  switchoverGraceMs: number;
  /** The store's endpoint (`etcd://h:p,…`), for the commands a finding names. */
  endpoint: string;
  /** etcd's raised alarms (none for the embedded store). */
  alarms: StoreAlarm[];
  /** Endpoints of the store URL whose member did not answer (etcd), with why. */
  silentEndpoints: { endpoint: string; error?: string }[];
  now?: number;
}

const START_CORE =
  'start core (`storctl up`, or `storctl daemon core`): at start it finishes or rolls back every pending operation';

/** An etcd alarm: every write is refused until it is dealt with and disarmed. */
function alarmFinding(a: StoreAlarm, endpoint: string, revision: number): StoreFinding {
  const ctl = `etcdctl --endpoints=${etcdHosts(endpoint)}`;
  const refuses =
    'etcd refuses every write: core cannot create, publish, scale or delete, a nexus that loses a child shuts down, and a core that restarts cannot start';
  const known: Record<string, { problem: string; fix: string }> = {
    NOSPACE: {
      problem: `etcd's space quota (--quota-backend-bytes) is exhausted (alarm NOSPACE); ${refuses}`,
      fix: `free space, then clear the alarm: \`${ctl} compact ${revision}\`, \`${ctl} defrag --cluster\`, \`${ctl} alarm disarm\`; or raise --quota-backend-bytes on every member (and run etcd with --auto-compaction-retention so history does not fill it again)`,
    },
    CORRUPT: {
      problem: `etcd found that its members' data differ (alarm CORRUPT); ${refuses}`,
      fix: `save the store first (\`storctl store dump > store.jsonl\`), then replace the corrupted member from a healthy one as etcd's disaster-recovery guide says, and \`${ctl} alarm disarm\``,
    },
  };
  const { problem, fix } = known[a.alarm] ?? {
    problem: `etcd raised alarm ${a.alarm}; ${refuses}`,
    fix: `see etcd's documentation of alarm ${a.alarm}, then \`${ctl} alarm disarm\``,
  };
  return {
    severity: 'error',
    check: 'store-alarm',
    subject: `member/${a.member}`,
    problem,
    fix,
    fixable: false,
  };
}

/** Every check over one read of the store; pure, so tests can feed it any store they made. */
export function checkStore(input: CheckInput): StoreFinding[] {
  const { scan, snapshot } = input;
  const now = input.now ?? Date.now();
  const specs = snapshot.cluster.specs;
  const out: StoreFinding[] = [];

  for (const a of input.alarms) out.push(alarmFinding(a, input.endpoint, scan.revision));
  for (const e of input.silentEndpoints)
    out.push({
      severity: 'warning',
      check: 'store-endpoint',
      subject: `endpoint/${e.endpoint}`,
      problem: `the etcd member at ${e.endpoint} does not answer (${e.error ?? 'no answer'}); the store works on the others, but each member lost takes etcd closer to losing its quorum, and then every write stops`,
      fix: `look at that member (\`etcdctl --endpoints=${e.endpoint} endpoint status\`, its log and disk): restart it, or replace it (\`etcdctl member remove\` / \`member add\`)`,
      fixable: false,
    });

  for (const err of scan.errors)
    out.push({
      severity: 'error',
      check: 'undecodable',
      subject: err.key,
      problem: err.message,
      fix: `correct its value: \`storctl store dump | grep -F '${err.key}' > fix.jsonl\`, edit the value there, then \`storctl store load fix.jsonl\` (it checks the value, then overwrites the key)`,
      fixable: false,
      key: err.key,
    });

  const coreAlive = input.leaseOwners.some((o) => o.value.kind === CORE_SERVICE_KIND && o.alive);
  for (const rec of scan.records) {
    const op = pendingOperation(rec.record);
    if (!op) continue;
    const age = ageOfRevision(scan.events, rec.modRevision, now);
    const since = age
      ? `${age.bound === 'exact' ? 'for' : `for ${age.bound}`} ${roughAge(age.ms)}`
      : `since revision ${rec.modRevision} (no event dates it)`;
    const result =
      op.result === null ? 'in progress' : op.result ? 'done, not committed' : 'failed, not cleared';
    out.push({
      severity: 'warning',
      check: 'pending-operation',
      subject: `${rec.record.type}/${rec.record.id}`,
      problem: `operation ${op.name} ${result}, pending ${since}`,
      fix: coreAlive
        ? 'core is running and has not settled it: check `storctl events` and core’s log; restarting core finishes or rolls it back'
        : START_CORE,
      fixable: false,
      key: rec.record.key,
      modRevision: rec.modRevision,
    });
  }

  const replicas = specs.ReplicaSpec ?? new Map();
  const nexuses = specs.NexusSpec ?? new Map();
  const volumes = specs.VolumeSpec ?? new Map();

  for (const r of replicas.values()) {
    const pool = replicaPoolName(r);
    if (hasRecord(snapshot.cluster, 'PoolSpec', pool)) continue;
    out.push({
      severity: 'error',
      check: 'missing-pool',
      subject: `ReplicaSpec/${r.uuid}`,
      problem: `replica on pool ${pool}, which has no PoolSpec`,
      fix: r.owners.volume
        ? `recreate the pool (\`storctl pool create NODE ${pool} --disk …\`), or let volume ${r.owners.volume} replace the replica: \`storctl volume scale ${r.owners.volume} N\``
        : `recreate the pool (\`storctl pool create NODE ${pool} --disk …\`)`,
      fixable: false,
    });
  }

  for (const n of nexuses.values()) {
    for (const child of n.children) {
      const id = childReplicaId(child);
      if (!id || hasRecord(snapshot.cluster, 'ReplicaSpec', id)) continue;
      out.push({
        severity: 'error',
        check: 'missing-replica',
        subject: `NexusSpec/${n.uuid}`,
        problem: `child replica ${id} has no ReplicaSpec`,
        fix: n.owner
          ? `republish volume ${n.owner} on its replicas: \`storctl volume unpublish ${n.owner}\`, then \`storctl volume publish ${n.owner}\``
          : `remove the nexus: \`storctl orphans --delete\` lists it if unowned, else DELETE /nexuses/${n.uuid}`,
        fixable: false,
      });
    }
  }

  // A ReplicaSpec that does not decode names no owner we can read: it may belong to any volume.
  const unreadableReplicas = snapshot.cluster.errors.filter(
    (e) => parseKey(e.key)?.type === 'ReplicaSpec',
  ).length;
  const unreadable = unreadableReplicas
    ? `; ${unreadableReplicas} ReplicaSpec(s) in the store do not decode, and may be its`
    : '';
  const owned = new Map<string, number>();
  for (const r of replicas.values())
    if (r.owners.volume) owned.set(r.owners.volume, (owned.get(r.owners.volume) ?? 0) + 1);
  for (const v of volumes.values()) {
    if (specStatusName(v.status) !== 'Created') continue;
    const target = activeTarget(v);
    if (target && !hasRecord(snapshot.cluster, 'NexusSpec', target.nexus))
      out.push({
        severity: 'error',
        check: 'missing-nexus',
        subject: `VolumeSpec/${v.uuid}`,
        problem: `published on nexus ${target.nexus} (node ${target.node}), which has no NexusSpec`,
        fix: `publish it again: \`storctl volume unpublish ${v.uuid}\`, then \`storctl volume publish ${v.uuid}\``,
        fixable: false,
      });
    const have = owned.get(v.uuid) ?? 0;
    if (have === 0)
      out.push({
        severity: 'error',
        check: 'volume-without-replicas',
        subject: `VolumeSpec/${v.uuid}`,
        problem: `no replica spec is owned by it (it wants ${v.num_replicas}): its data is gone from the store's view${unreadable}`,
        fix: unreadableReplicas
          ? 'correct the undecodable ReplicaSpecs first (their findings above): they may be its replicas'
          : `restore the ReplicaSpecs from a dump (\`storctl store load\`), or delete the volume: \`storctl volume delete ${v.uuid}\``,
        fixable: false,
      });
    else if (have < v.num_replicas)
      out.push({
        severity: 'warning',
        check: 'under-replicated',
        subject: `VolumeSpec/${v.uuid}`,
        problem: `${have} of ${v.num_replicas} replicas${unreadable}`,
        fix: unreadableReplicas
          ? 'correct the undecodable ReplicaSpecs first (their findings above): they may be its replicas'
          : v.policy.self_heal
            ? `core adds the missing replicas while it runs (self-heal); if not, check \`storctl describe volume ${v.uuid}\``
            : `self-heal is off: \`storctl volume scale ${v.uuid} ${v.num_replicas}\` after freeing pool space, or lower the count`,
        fixable: false,
      });
  }

  for (const o of findReplicaOrphans(snapshot))
    out.push({
      severity: 'warning',
      check: 'replica-without-owner',
      subject: `ReplicaSpec/${o.id}`,
      problem: o.reason,
      fix: 'core’s replica GC removes it while core runs; now: `storctl orphans --delete` (through core)',
      fixable: false,
      orphan: o,
    });
  for (const o of findNexusOrphans(snapshot))
    out.push({
      severity: 'warning',
      check: 'nexus-without-owner',
      subject: `NexusSpec/${o.id}`,
      problem: o.reason,
      fix: 'core’s nexus GC removes it while core runs; now: `storctl orphans --delete` (through core)',
      fixable: false,
      orphan: o,
    });
  for (const o of findNexusInfoOrphans(snapshot))
    out.push({
      severity: 'warning',
      check: 'orphan-nexus-info',
      subject: o.key ?? `NexusInfo/${o.id}`,
      problem: o.reason,
      fix: '`storctl doctor store --fix` (or `storctl orphans --delete`) deletes the key',
      fixable: true,
      key: o.key,
      modRevision: o.modRevision,
      orphan: o,
    });
  for (const o of findSwitchOverOrphans(snapshot, input.switchoverGraceMs, now))
    out.push({
      severity: 'warning',
      check: 'stale-switchover',
      subject: `SwitchOver/${o.id}`,
      problem: o.reason,
      fix: '`storctl doctor store --fix` (or `storctl orphans --delete`) deletes the record',
      fixable: true,
      key: o.key,
      modRevision: o.modRevision,
      orphan: o,
    });

  // One still in progress on an existing volume is ha-cluster's to finish: reported, never deleted.
  for (const rec of snapshot.switchovers) {
    const so = rec.value;
    if (isSwitchOverDone(so) || !volumes.has(so.volume)) continue;
    const age = now - Date.parse(so.timestamp);
    if (!(age >= input.switchoverGraceMs)) continue;
    out.push({
      severity: 'warning',
      check: 'stale-switchover',
      subject: `SwitchOver/${so.volume}`,
      problem: `switchover at stage ${switchOverStageName(so)} since ${roughAge(age)} ago (retry ${so.retry_count}), past the ${formatDuration(input.switchoverGraceMs)} grace`,
      fix: 'ha-cluster retries it while it runs: check that it runs and its log (`storctl get switchovers` shows the stage)',
      fixable: false,
      key: rec.key,
      modRevision: rec.modRevision,
    });
  }

  for (const owner of input.leaseOwners) {
    if (owner.alive) continue;
    out.push({
      severity: 'warning',
      check: 'dead-lease-owner',
      subject: `StoreLeaseOwner/${owner.value.kind}`,
      problem: `names instance ${owner.value.instance_name} with lease ${owner.value.lease_id}, which is not alive (that ${owner.value.kind} is gone)`,
      fix: `start the service (it takes the lease and rewrites the record), or \`storctl doctor store --fix\` deletes the stale record`,
      fixable: true,
      key: owner.record.record.key,
      modRevision: owner.record.modRevision,
    });
  }

  const rank = (f: StoreFinding) => severities.indexOf(f.severity) * 100 + storeChecks.indexOf(f.check);
  return out.sort((a, b) => rank(a) - rank(b) || a.subject.localeCompare(b.subject));
}

/** The operation a record has pending, or null. (A SwitchOver's operation is its stage: not here.) */
function pendingOperation(rec: DecodedRecord): { name: string; result: boolean | null } | null {
  let op: { operation: unknown; result: boolean | null } | null | undefined;
  switch (rec.type) {
    case 'VolumeSpec':
    case 'ReplicaSpec':
    case 'NexusSpec':
    case 'PoolSpec':
    case 'NodeSpec':
      op = rec.value.operation;
      break;
    case 'VolumeSnapshot':
      op = rec.value.metadata.operation;
      break;
    default:
      return null;
  }
  return op ? { name: operationName(op.operation as string | object), result: op.result } : null;
}

/** An age rounded to its largest whole unit: 3h, 12m, 40s. */
function roughAge(ms: number): string {
  if (ms >= 3_600_000) return `${Math.floor(ms / 3_600_000)}h`;
  if (ms >= 60_000) return `${Math.floor(ms / 60_000)}m`;
  return formatDuration(Math.max(0, Math.floor(ms / 1000)) * 1000);
}
