/**
 * NodeSpec, key `NodeSpec/<node-id>` (docs/mayastor-compat.md §1.10). Most optional fields are left
 * out when empty or none. A node is cordoned iff `cordon_drain_state` is present.
 */
import { array, bool, type Codec, emptyTuple, nullable, string, tagged, uuid } from './codec.js';
import {
  type LabelOp,
  type Labels,
  labelOp,
  labels,
  type OperationRecord,
  operationRecord,
  specCodec,
  type UnlabelOp,
  unlabelOp,
} from './common.js';
import { nvmeNqn } from './nqn.js';
import { field, optional, struct } from './struct.js';

export interface CordonedState {
  cordonlabels: string[];
}

export interface DrainState {
  cordonlabels: string[];
  drainlabels: string[];
}

export type CordonDrainState =
  | { Cordoned: CordonedState }
  | { Draining: DrainState }
  | { Drained: DrainState };

export type NodeOperation =
  | { Cordon: string }
  | { Uncordon: string }
  | { Drain: string }
  | { AddDrainingVolumes: { volumes: string[] } }
  | { RemoveDrainingVolumes: { volumes: string[] } }
  | { RemoveAllDrainingVolumes: [] }
  | { SetDrained: [] }
  | { Label: LabelOp }
  | { Unlabel: UnlabelOp };

/** io-engine capabilities (camelCase), each unknown (null) until reported. */
export interface NodeFeatures {
  asymmetricNamespaceAccess: boolean | null;
  logicalVolumeManager: boolean | null;
  snapshotRebuild: boolean | null;
  rdmaCapableIoEngine: boolean | null;
}

export interface NodeBugFixes {
  nexusRebuildReplicaAncestry: boolean;
}

export interface NodeSpec {
  id: string;
  /** gRPC endpoint of the io-engine, "ip:10124". */
  endpoint: string;
  /** Left out when empty. */
  labels: Labels;
  cordon_drain_state?: CordonDrainState;
  node_nqn?: string;
  /** Volumes still draining off the node; left out when empty. */
  draining_volumes: string[];
  operation?: OperationRecord<NodeOperation>;
  features?: NodeFeatures;
  bugfixes?: NodeBugFixes;
  /** io-engine version, e.g. "v2.7.0". */
  version?: string;
}

const cordoned = struct<CordonedState>('CordonedState', { cordonlabels: field(array(string)) });
const drainState = struct<DrainState>('DrainState', {
  cordonlabels: field(array(string)),
  drainlabels: field(array(string)),
});
const volumes = struct<{ volumes: string[] }>('DrainingVolumes', { volumes: field(array(uuid)) });

export const cordonDrainState = tagged<CordonDrainState>({
  Cordoned: cordoned,
  Draining: drainState,
  Drained: drainState,
});

const nodeOperation = tagged<NodeOperation>({
  Cordon: string,
  Uncordon: string,
  Drain: string,
  AddDrainingVolumes: volumes,
  RemoveDrainingVolumes: volumes,
  RemoveAllDrainingVolumes: emptyTuple,
  SetDrained: emptyTuple,
  Label: labelOp,
  Unlabel: unlabelOp,
});

const feature = () => field(nullable(bool));

export const nodeSpecCodec: Codec<NodeSpec> = struct<NodeSpec>('NodeSpec', {
  id: field(string),
  endpoint: field(string),
  labels: field(labels, { default: () => ({}), omit: (l) => Object.keys(l).length === 0 }),
  cordon_drain_state: optional(cordonDrainState),
  // upstream's Option<HostNqn>: an NQN or nothing.
  node_nqn: optional(nvmeNqn),
  draining_volumes: field(array(uuid), { default: () => [], omit: (v) => v.length === 0 }),
  operation: optional(operationRecord('NodeOperationState', nodeOperation)),
  features: optional(
    struct<NodeFeatures>('NodeFeatures', {
      asymmetricNamespaceAccess: feature(),
      logicalVolumeManager: feature(),
      snapshotRebuild: feature(),
      rdmaCapableIoEngine: feature(),
    }),
  ),
  bugfixes: optional(
    struct<NodeBugFixes>('NodeBugFixes', {
      nexusRebuildReplicaAncestry: field(bool, { default: () => false }),
    }),
  ),
  version: optional(string),
});

export const nodeSpec = specCodec<NodeSpec>('NodeSpec', nodeSpecCodec, 'id', (n) => n.id);

export type CordonStateName = 'Cordoned' | 'Draining' | 'Drained';

/** A node is cordoned (no new resources scheduled on it) while any cordon/drain state is set. */
export function isCordoned(n: NodeSpec): boolean {
  return n.cordon_drain_state !== undefined;
}

/** 'Cordoned' | 'Draining' | 'Drained', or null when schedulable. */
export function cordonStateName(n: NodeSpec): CordonStateName | null {
  const s = n.cordon_drain_state;
  return s ? (Object.keys(s)[0] as CordonStateName) : null;
}

/** Drain progress: 'Draining' | 'Drained', or null when the node is not being drained. */
export function drainStateName(n: NodeSpec): 'Draining' | 'Drained' | null {
  const name = cordonStateName(n);
  return name === 'Draining' || name === 'Drained' ? name : null;
}

/** Labels the node was cordoned with (a drain also cordons). */
export function cordonLabels(n: NodeSpec): string[] {
  const s = n.cordon_drain_state;
  if (!s) return [];
  return 'Cordoned' in s
    ? s.Cordoned.cordonlabels
    : 'Draining' in s
      ? s.Draining.cordonlabels
      : s.Drained.cordonlabels;
}

/** Labels of the drains requested on the node. */
export function drainLabels(n: NodeSpec): string[] {
  const s = n.cordon_drain_state;
  if (!s || 'Cordoned' in s) return [];
  return 'Draining' in s ? s.Draining.drainlabels : s.Drained.drainlabels;
}

/**
 * STATUS text as kubectl-mayastor shows it: the runtime status (`Online`, `Unknown`…) followed by the
 * cordon state — `Online`, `Online, Cordoned`, `Online, Cordoned, Draining`, `Online, Cordoned, Drained`.
 */
export function nodeStatusText(n: NodeSpec, runtimeStatus: string): string {
  const parts = [runtimeStatus];
  if (isCordoned(n)) parts.push('Cordoned');
  const drain = drainStateName(n);
  if (drain) parts.push(drain);
  return parts.join(', ');
}

/** DRAIN STATE column text: `Not draining` | `Draining` | `Drained`. */
export function drainStateText(n: NodeSpec): 'Not draining' | 'Draining' | 'Drained' {
  return drainStateName(n) ?? 'Not draining';
}

/** Whether every `k=v` of `selector` is among the node's labels. */
export function nodeMatches(n: NodeSpec, selector: Labels): boolean {
  return Object.entries(selector).every(([k, v]) => n.labels[k] === v);
}
