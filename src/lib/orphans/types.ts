/**
 * What `storctl orphans` finds: resources nothing owns any more, each with why it is one and what
 * `--delete` does about it. One finder per kind (files beside this one); `find.ts` runs them.
 */

export const orphanKinds = [
  /** A ReplicaSpec of a managed replica whose owner volume is unset or gone. */
  'replica',
  /** A replica an io-engine holds with no ReplicaSpec at all. */
  'engine-replica',
  /** A NexusSpec whose owner volume is gone, or a managed nexus with no owner. */
  'nexus',
  /** A nexus an io-engine runs with no NexusSpec at all. */
  'engine-nexus',
  /** A replica snapshot an io-engine holds that no volume snapshot records (a failed attempt's). */
  'engine-snapshot',
  /** A NexusInfo record of a volume (or nexus) that no longer exists. */
  'nexus-info',
  /** A SwitchOver record of a deleted volume, or a finished one older than the grace. */
  'switchover',
  /** A volume csi-node still has staged or published here though it is gone or unpublished. */
  'csi-node-volume',
  /** A volume with neither PersistentVolume nor PersistentVolumeClaim in Kubernetes. */
  'volume-without-claim',
] as const;
export type OrphanKind = (typeof orphanKinds)[number];

export interface Orphan {
  kind: OrphanKind;
  /** The orphan's own id: replica / nexus / volume uuid, or the NexusInfo's nexus id. */
  id: string;
  /** The volume it belonged to (or names), when there is one. */
  volume: string | null;
  /** Node it lives on, when known. */
  node: string | null;
  /** Pool (replicas). */
  pool: string | null;
  /** Why it is an orphan, in one sentence. */
  reason: string;
  /** What `--delete` does about it. */
  action: string;
  /** Store key (records deleted from the store directly) and its mod revision when read. */
  key?: string;
  modRevision?: number;
  /** csi-node leftovers: the paths, mounts and processes it consists of. */
  paths?: string[];
}

/** Something a finder could not look at (an io-engine that did not answer…): printed as a note. */
export interface FindNote {
  source: string;
  message: string;
}

export interface FindResult {
  orphans: Orphan[];
  notes: FindNote[];
}

/** What --delete did with one orphan. */
export interface DeleteOutcome {
  orphan: Orphan;
  result: 'deleted' | 'skipped' | 'failed';
  detail: string;
  /** For a failure: the exit code its error maps to (6 when core or an io-engine is unreachable…). */
  exitCode?: number;
}
