/**
 * Pieces shared by several Mayastor records (docs/mayastor-compat.md §1.4–1.5): SpecStatus, the
 * crash-safe operation record, labels, share protocols, the NVMe-oF target config, label operations,
 * and `specCodec`, which turns a struct codec into the key-aware codec every record type exposes.
 */
import { DecodeError } from '../errors.js';
import {
  bigIntCount,
  bool,
  type Codec,
  FieldError,
  literals,
  nullable,
  record,
  string,
  tagged,
  u16,
  u64big,
  variantName,
} from './codec.js';
import { parseJsonMarked, stringifyJson } from './json.js';
import { field, struct } from './struct.js';

// ---------------------------------------------------------------------------------------------
// SpecStatus<T>: "Creating" | {"Created": T} | "Deleting" | "Deleted"

export type SpecStatus<T> = 'Creating' | { Created: T } | 'Deleting' | 'Deleted';
export type SpecStatusName = 'Creating' | 'Created' | 'Deleting' | 'Deleted';

export function specStatus<T>(inner: Codec<T>): Codec<SpecStatus<T>> {
  return tagged<SpecStatus<T>>({ Creating: null, Created: inner, Deleting: null, Deleted: null });
}

/** The flat name REST shows: Creating | Created | Deleting | Deleted. */
export function specStatusName(status: SpecStatus<unknown>): SpecStatusName {
  return variantName(status as string | object) as SpecStatusName;
}

/**
 * The state inside `Created`, or null when the spec is not Created. (For snapshots the state is
 * `()` and is null either way: use `specStatusName` there.)
 */
export function createdState<T>(status: SpecStatus<T>): T | null {
  return typeof status === 'object' && status !== null ? status.Created : null;
}

export function isCreated(status: SpecStatus<unknown>): boolean {
  return typeof status === 'object' && status !== null;
}

/**
 * The name REST shows for an operation of any record: the variant name (`{"SetReplica":3}` →
 * `SetReplica`), with the volume's `Publish2` (and legacy `Publish`) shown as `Publish`.
 */
export function operationName(op: string | object): string {
  const name = variantName(op);
  return name === 'Publish2' ? 'Publish' : name;
}

/** Mayastor's VolumeStatus / NexusStatus (no serde rename). */
export const nexusStatuses = [
  'Unknown',
  'Online',
  'Degraded',
  'Faulted',
  'Shutdown',
  'ShuttingDown',
] as const;
export type NexusStatus = (typeof nexusStatuses)[number];
export const nexusStatus = literals(nexusStatuses);

// ---------------------------------------------------------------------------------------------
// Operation record {operation, result}

/** An operation in progress (`result` null) or finished but not yet committed to the store. */
export interface OperationRecord<Op> {
  operation: Op;
  result: boolean | null;
}

export function operationRecord<Op>(name: string, op: Codec<Op>): Codec<OperationRecord<Op>> {
  return struct<OperationRecord<Op>>(name, { operation: field(op), result: field(nullable(bool)) });
}

// ---------------------------------------------------------------------------------------------
// Labels, protocols

export type Labels = Record<string, string>;
export const labels: Codec<Labels> = record(string);

/** Share protocol as Mayastor writes it (lowercase); storctl adds `nbd`. */
export const protocols = ['none', 'nvmf', 'iscsi', 'nbd'] as const;
export type Protocol = (typeof protocols)[number];
export const protocol = literals(protocols);

/** Protocol of a shared target (a volume target, `Share` operations). */
export const shareProtocols = ['nvmf', 'iscsi', 'nbd'] as const;
export type ShareProtocol = (typeof shareProtocols)[number];
export const shareProtocol = literals(shareProtocols);

/** `{"Label":{"labels":{..},"overwrite":bool}}` on pools and nodes. */
export interface LabelOp {
  labels: Labels;
  overwrite: boolean;
}
export const labelOp = struct<LabelOp>('label operation', { labels: field(labels), overwrite: field(bool) });

/** `{"Unlabel":{"label_key":"k"}}` on pools and nodes. */
export interface UnlabelOp {
  label_key: string;
}
export const unlabelOp = struct<UnlabelOp>('unlabel operation', { label_key: field(string) });

// ---------------------------------------------------------------------------------------------
// NexusNvmfConfig (camelCase): on volume targets and nexus specs

export const reservationTypes = [
  'Reserved',
  'WriteExclusive',
  'ExclusiveAccess',
  'WriteExclusiveRegsOnly',
  'ExclusiveAccessRegsOnly',
  'WriteExclusiveAllRegs',
  'ExclusiveAccessAllRegs',
] as const;
export type ReservationType = (typeof reservationTypes)[number];

export type PreemptPolicy = 'Holder' | { ArgKey: bigint | null };

export interface ControllerIdRange {
  start: number;
  end: number;
}

export interface NexusNvmfConfig {
  controllerIdRange: ControllerIdRange;
  /** Low 64 bits of the nexus uuid: a full-range u64, hence a bigint. */
  reservationKey: bigint;
  reservationType: ReservationType;
  preemptPolicy: PreemptPolicy;
}

/** Controller ids valid for NVMe-oF targets. */
export const CONTROLLER_ID_MIN = 1;
export const CONTROLLER_ID_MAX = 65519;

const controllerId: Codec<number> = {
  expected: `a controller id (${CONTROLLER_ID_MIN}..=${CONTROLLER_ID_MAX})`,
  decode: (raw) => {
    const n = u16.decode(raw);
    if (n < CONTROLLER_ID_MIN || n > CONTROLLER_ID_MAX) {
      throw new FieldError(
        `expected a controller id (${CONTROLLER_ID_MIN}..=${CONTROLLER_ID_MAX}), got ${n}`,
      );
    }
    return n;
  },
  encode: (v) => v,
};

export const controllerIdRange = struct<ControllerIdRange>('controller id range', {
  start: field(controllerId),
  end: field(controllerId),
});

/** Mayastor's default: full controller id range, key 1, ExclusiveAccess, Holder. */
export function defaultNvmfConfig(): NexusNvmfConfig {
  return {
    controllerIdRange: { start: CONTROLLER_ID_MIN, end: CONTROLLER_ID_MAX },
    reservationKey: 1n,
    reservationType: 'ExclusiveAccess',
    preemptPolicy: 'Holder',
  };
}

export const nexusNvmfConfig = struct<NexusNvmfConfig>('NexusNvmfConfig', {
  controllerIdRange: field(controllerIdRange),
  reservationKey: field(u64big),
  reservationType: field(literals(reservationTypes)),
  preemptPolicy: field(tagged<PreemptPolicy>({ Holder: null, ArgKey: nullable(u64big) })),
});

// ---------------------------------------------------------------------------------------------
// Key-aware codec of one record type

/** Codec of one stored record type: validates on decode, writes Mayastor's JSON on encode. */
export interface SpecCodec<T> {
  /** The key segment (`VolumeSpec`…), or `NexusInfo`. */
  readonly type: string;
  /**
   * Decode a stored value. `json` is the stored text, or an already parsed value. Throws
   * `DecodeError` naming the key and the field path (field `<root>` for invalid JSON).
   */
  decode(key: string, json: string | unknown): T;
  /** The JSON text Mayastor would store (compact; unknown fields of a decoded value kept). */
  encode(value: T): string;
  /** The JSON value of `encode` (for `-o json|yaml`); u64 beyond 2^53 are bigints. */
  toJson(value: T): unknown;
  /** The id the key ends with (`<Type>/<id>`), or null when the key is not derived from the value. */
  idOf(value: T): string | null;
  /** Field path of that id (`uuid`, `spec.uuid`…), or null. */
  readonly idField: string | null;
}

export function specCodec<T>(
  type: string,
  codec: Codec<T>,
  idField: string | null,
  idOf: (value: T) => string | null,
): SpecCodec<T> {
  return {
    type,
    idField,
    decode(key, json) {
      let raw: unknown = json;
      if (typeof json === 'string') {
        try {
          raw = parseJsonMarked(json);
        } catch (err) {
          throw new DecodeError(key, '<root>', `is not valid JSON: ${(err as Error).message}`, {
            cause: err,
          });
        }
      }
      try {
        return codec.decode(raw);
      } catch (err) {
        if (err instanceof FieldError)
          throw new DecodeError(key, err.path || '<root>', err.detail, { cause: err });
        throw err;
      }
    },
    encode: (value) => {
      const before = bigIntCount();
      const tree = codec.encode(value);
      return stringifyJson(tree, bigIntCount() !== before);
    },
    toJson: (value) => codec.encode(value),
    idOf,
  };
}
