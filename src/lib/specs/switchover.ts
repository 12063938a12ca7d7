/**
 * SwitchOver, key `SwitchOver/<volume-uuid>`, written by the HA cluster agent while it moves a
 * volume's target (docs/mayastor-compat.md §1.13). The stage advances Init → RepublishVolume →
 * ReplacePath → DeleteTarget → Successful, or ends in `{"Errored": message}`.
 */
import { bool, type Codec, nullable, record, string, tagged, u64, uuid, variantName } from './codec.js';
import { type OperationRecord, operationRecord, specCodec } from './common.js';
import { field, optional, struct } from './struct.js';

export type SwitchOverStage =
  | 'Init'
  | 'RepublishVolume'
  | 'ReplacePath'
  | 'DeleteTarget'
  | 'Successful'
  | { Errored: string };

export interface SwitchOverSpec {
  /** ha-node agent endpoint "ip:port" to call back. */
  callback_uri: string;
  node_name: string;
  volume: string;
  operation: OperationRecord<SwitchOverStage> | null;
  /** RFC 3339 UTC time of the request. */
  timestamp: string;
  existing_nqn: string;
  new_path: string | null;
  retry_count: number;
  reuse_existing: boolean;
  publish_context: Record<string, string> | null;
  /**
   * storctl's addition: the node an operator asked for (`storctl switchover --to-node`), kept so a
   * restarted ha-cluster still honours it. Left out when unset, so upstream values are unchanged.
   */
  target_node?: string;
  /**
   * storctl's addition: ha-cluster has asked core to republish the volume for this record. Core's
   * republish tears the old target down before it builds the new one, so with this set a volume
   * found unpublished may be left so by that republish (no node could build the target): it is
   * published again. Without it, an unpublished volume was unpublished by someone else (its
   * application let go of it): the switchover ends there. Left out until set.
   */
  republish_attempted?: boolean;
}

export const switchOverStage = tagged<SwitchOverStage>({
  Init: null,
  RepublishVolume: null,
  ReplacePath: null,
  DeleteTarget: null,
  Successful: null,
  Errored: string,
});

export const switchOverCodec: Codec<SwitchOverSpec> = struct<SwitchOverSpec>('SwitchOverSpec', {
  callback_uri: field(string),
  node_name: field(string),
  volume: field(uuid),
  operation: field(nullable(operationRecord('SwitchOverOperationState', switchOverStage))),
  timestamp: field(string),
  existing_nqn: field(string),
  new_path: field(nullable(string)),
  retry_count: field(u64, { default: () => 0 }),
  reuse_existing: field(bool, { default: () => false }),
  publish_context: field(nullable(record(string))),
  target_node: optional(string),
  republish_attempted: optional(bool),
});

export const switchOver = specCodec<SwitchOverSpec>('SwitchOver', switchOverCodec, 'volume', (s) => s.volume);

/** The stage name (`Errored` for an error), or null when no stage is recorded. */
export function switchOverStageName(s: SwitchOverSpec): string | null {
  return s.operation ? variantName(s.operation.operation) : null;
}

/** Error message of an errored switchover, or null. */
export function switchOverError(s: SwitchOverSpec): string | null {
  const op = s.operation?.operation;
  return op && typeof op === 'object' ? op.Errored : null;
}

/** Whether the switchover has finished (successfully or not). */
export function isSwitchOverDone(s: SwitchOverSpec): boolean {
  const name = switchOverStageName(s);
  return name === 'Successful' || name === 'Errored';
}
