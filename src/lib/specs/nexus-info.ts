/**
 * NexusInfo, written by io-engine under `volume/<volume>/nexus/<nexus>/info` (or `nexus/<nexus>/info`
 * when unowned) (docs/mayastor-compat.md §1.12, §3.6): whether the nexus shut down cleanly and which of
 * its children were healthy, which decides the replicas a new target may use.
 *
 * io-engine serializes through a `serde_json::Value`, whose maps are sorted, so a newly written value
 * has its keys in alphabetical order: `{"children":[{"healthy":…,"uuid":…}],"clean_shutdown":…}`.
 *
 * storctl adds `do_self_shutdown` (HA fencing, written by core when a switchover moves the target
 * away): the io-engine still hosting that nexus must shut it down and refuse its I/O. It is left out
 * while false, so every value upstream writes or reads is unchanged.
 */
import { array, bool, type Codec, uuid } from './codec.js';
import { specCodec } from './common.js';
import { field, struct } from './struct.js';

export interface ChildInfo {
  healthy: boolean;
  uuid: string;
}

export interface NexusInfo {
  children: ChildInfo[];
  clean_shutdown: boolean;
  /** The target was moved away: the nexus must not serve again (storctl's fencing flag). */
  do_self_shutdown?: boolean;
}

export const childInfo = struct<ChildInfo>('ChildInfo', { healthy: field(bool), uuid: field(uuid) });

export const nexusInfoCodec: Codec<NexusInfo> = struct<NexusInfo>('NexusInfo', {
  children: field(array(childInfo)),
  clean_shutdown: field(bool),
  do_self_shutdown: field(bool, { default: () => false, omit: (v) => !v }),
});

/** The key does not end in a value-derived id (`…/nexus/<nexus>/info`): `idOf` is null. */
export const nexusInfo = specCodec<NexusInfo>('NexusInfo', nexusInfoCodec, null, () => null);

/** Uuids of the children recorded healthy. */
export function healthyChildren(info: NexusInfo): string[] {
  return info.children.filter((c) => c.healthy).map((c) => c.uuid);
}

/** Whether the replica is recorded and healthy. */
export function isChildHealthy(info: NexusInfo, replicaId: string): boolean {
  return info.children.some((c) => c.uuid === replicaId && c.healthy);
}
