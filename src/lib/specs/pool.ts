/**
 * PoolSpec, key `PoolSpec/<pool-id>` (docs/mayastor-compat.md §1.8). Status `{"Created":"Online"}`.
 */
import { array, type Codec, literals, nullable, string, tagged } from './codec.js';
import {
  type LabelOp,
  type Labels,
  labelOp,
  labels,
  type OperationRecord,
  operationRecord,
  type SpecStatus,
  specCodec,
  specStatus,
  type UnlabelOp,
  unlabelOp,
} from './common.js';
import { field, struct } from './struct.js';

export const poolStatuses = ['Unknown', 'Online', 'Degraded', 'Faulted'] as const;
export type PoolStatus = (typeof poolStatuses)[number];

export type PoolOperation = 'Create' | 'Destroy' | { Label: LabelOp } | { Unlabel: UnlabelOp };

export interface PoolSpec {
  /** Node (io-engine) the pool lives on. */
  node: string;
  /** Pool name, e.g. `pool-1-on-node-1`; the key id. */
  id: string;
  /** Device URIs as given: `/dev/sdb`, `aio:///dev/vdb`, … */
  disks: string[];
  status: SpecStatus<PoolStatus>;
  labels: Labels | null;
  operation: OperationRecord<PoolOperation> | null;
}

/** Label the DiskPool operator puts on the pools it creates. */
export const CREATED_BY_LABEL = 'openebs.io/created-by';
export const CREATED_BY_OPERATOR = 'operator-diskpool';

const poolOperation = tagged<PoolOperation>({
  Create: null,
  Destroy: null,
  Label: labelOp,
  Unlabel: unlabelOp,
});

export const poolSpecCodec: Codec<PoolSpec> = struct<PoolSpec>('PoolSpec', {
  node: field(string),
  id: field(string),
  disks: field(array(string)),
  status: field(specStatus(literals(poolStatuses))),
  labels: field(nullable(labels)),
  operation: field(nullable(operationRecord('PoolOperationState', poolOperation))),
});

export const poolSpec = specCodec<PoolSpec>('PoolSpec', poolSpecCodec, 'id', (p) => p.id);

/** The pool's disks (device URIs as given at creation). */
export function poolDisks(p: PoolSpec): string[] {
  return [...p.disks];
}

/** The pool's labels (empty when none). */
export function poolLabels(p: PoolSpec): Labels {
  return p.labels ?? {};
}

/** Whether every `k=v` of `selector` is among the pool's labels. */
export function poolMatches(p: PoolSpec, selector: Labels): boolean {
  const l = poolLabels(p);
  return Object.entries(selector).every(([k, v]) => l[k] === v);
}
