import { type SwitchOverSpec, type SwitchOverStage, switchOver } from '../../lib/specs/index.js';
import { type KeySpace, objectKey, StorableType, typePrefix } from '../../lib/store/keys.js';
import type { Compare, Store, TxnOp } from '../../lib/store/types.js';

/** A SwitchOver record as the active ha-cluster holds it: the value and its mod revision. */
export interface StoredSwitchOver {
  spec: SwitchOverSpec;
  rev: number;
}

/**
 * `SwitchOver/<volume>` records (docs/mayastor-compat.md §1.13). Every write is a compare-and-swap
 * on the record's mod revision, guarded by the ha-cluster leadership lease: two reports, two
 * agents or a deposed leader can never both start or advance a switchover of one volume.
 */
export class SwitchOverRecords {
  constructor(
    private readonly store: Store,
    private readonly space: KeySpace,
    private readonly guard: () => Compare,
  ) {}

  key(volume: string): string {
    return objectKey(this.space, StorableType.SwitchOver, volume);
  }

  async loadAll(): Promise<StoredSwitchOver[]> {
    const { kvs } = await this.store.range(typePrefix(this.space, StorableType.SwitchOver));
    return kvs.map((kv) => ({ spec: switchOver.decode(kv.key, kv.value), rev: kv.modRevision }));
  }

  async get(volume: string): Promise<StoredSwitchOver | null> {
    const key = this.key(volume);
    const kv = await this.store.get(key);
    return kv ? { spec: switchOver.decode(key, kv.value), rev: kv.modRevision } : null;
  }

  /**
   * Write `spec` if the record is still at `rev` (0: absent), with `also` in the same transaction
   * (an event, so it is recorded exactly once with the stage). Null when someone else changed it.
   */
  async put(spec: SwitchOverSpec, rev: number, also: TxnOp[] = []): Promise<StoredSwitchOver | null> {
    const key = this.key(spec.volume);
    const res = await this.store.txn({
      compare: [this.guard(), { key, target: 'mod', op: '==', value: rev }],
      success: [{ type: 'put', key, value: switchOver.encode(spec) }, ...also],
    });
    return res.succeeded ? { spec, rev: res.revision } : null;
  }

  async delete(volume: string, rev: number, also: TxnOp[] = []): Promise<boolean> {
    const key = this.key(volume);
    const res = await this.store.txn({
      compare: [this.guard(), { key, target: 'mod', op: '==', value: rev }],
      success: [{ type: 'delete', key }, ...also],
    });
    return res.succeeded;
  }
}

export function stageOf(spec: SwitchOverSpec): SwitchOverStage {
  return spec.operation?.operation ?? 'Init';
}

export function stageName(stage: SwitchOverStage): string {
  return typeof stage === 'string' ? stage : 'Errored';
}
