import { poolStatus } from '../catalog/views/pools.js';
import { volumeStatus } from '../catalog/views/volumes.js';
import { humanizeBytes } from '../output/humanize.js';
import {
  drainStateText,
  healthInfoNexusId,
  nodeStatusText,
  replicaPoolName,
  switchOverStageName,
  volumeTargetNode,
} from '../specs/index.js';
import { poolBar } from './bar.js';
import type { Snapshot } from './model.js';

export type Tone = 'ok' | 'warn' | 'bad' | undefined;

/** One row of a panel: its cells and the tone of its status. */
export interface Row {
  cells: string[];
  tone?: Tone;
}

export interface Column {
  header: string;
  /** Fixed width; the column without one takes what is left. */
  width?: number;
}

/**
 * A panel's table: the ids of its rows in order, and how to render one row. Rows are built only
 * when shown (or when a filter reads them): with 10k volumes a change costs a sort of ids and a
 * screenful of rows, not 10k rows.
 */
export interface Table {
  columns: Column[];
  ids: string[];
  row(id: string): Row;
}

const toneOf = (status: string): Tone =>
  /^(Online|Created|online|healthy)/.test(status)
    ? 'ok'
    : /Offline|Faulted|Unknown|Errored/.test(status)
      ? 'bad'
      : 'warn';

const sortedIds = (map: Map<string, unknown> | undefined): string[] =>
  map ? [...map.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)) : [];

/** A table over the entries of `map`, each row built by `build` when asked for. */
function lazyTable<V>(
  columns: Column[],
  map: Map<string, V> | undefined,
  build: (id: string, v: V) => Row,
): Table {
  const cache = new Map<string, Row>();
  return {
    columns,
    ids: sortedIds(map),
    row(id) {
      let r = cache.get(id);
      if (!r) {
        const v = map?.get(id);
        r = v === undefined ? { cells: [id] } : build(id, v);
        cache.set(id, r);
      }
      return r;
    },
  };
}

export function nodeTable(s: Snapshot): Table {
  return lazyTable(
    [{ header: 'NODE', width: 16 }, { header: 'STATUS', width: 28 }, { header: 'ENDPOINT' }],
    s.state.specs.NodeSpec,
    (id, n) => {
      const live = s.state.liveness.get(id);
      const status = nodeStatusText(n, live ? 'Online' : 'Offline');
      const drain = drainStateText(n);
      return {
        cells: [id, status, `${n.endpoint}${live?.nbdEndpoint ? `  nbd ${live.nbdEndpoint}` : ''}`],
        tone: !live ? 'bad' : status === 'Online' && drain === 'Not draining' ? 'ok' : 'warn',
      };
    },
  );
}

export function poolTable(s: Snapshot, barWidth: number): Table {
  const committed = new Map<string, number>();
  for (const r of s.state.specs.ReplicaSpec?.values() ?? []) {
    const pool = replicaPoolName(r);
    committed.set(pool, (committed.get(pool) ?? 0) + r.size);
  }
  return lazyTable(
    [
      { header: 'POOL', width: 14 },
      { header: 'NODE', width: 10 },
      { header: 'STATUS', width: 8 },
      { header: 'FILL', width: barWidth + 1 },
      { header: 'USED / COMMITTED / CAPACITY' },
    ],
    s.state.specs.PoolSpec,
    (id, p) => {
      const live = s.live?.pools.get(id);
      const status = poolStatus(p, s.state.liveness.has(p.node), s.live && { state: live });
      const c = committed.get(id) ?? 0;
      const numbers = live
        ? `${humanizeBytes(live.used)} / ${humanizeBytes(c)} / ${humanizeBytes(live.capacity)}`
        : `? / ${humanizeBytes(c)} / ? (core not reachable)`;
      return {
        cells: [id, p.node, status, poolBar(live?.used, c, live?.capacity, barWidth), numbers],
        tone: toneOf(status),
      };
    },
  );
}

/** Replica health of a volume: `healthy/wanted`, and `r:N%` (the lowest rebuild progress) while rebuilding. */
function replicaText(s: Snapshot, volumeId: string, want: number): string {
  const topology = s.live?.volumes.get(volumeId)?.state.replica_topology;
  if (topology) {
    const reps = Object.values(topology);
    const healthy = reps.filter((r) => r['child-status'] === 'Online' || r.state === 'Online').length;
    const progress = reps.flatMap((r) =>
      r['rebuild-progress'] === undefined ? [] : [r['rebuild-progress']],
    );
    return `${healthy}/${want}${progress.length ? ` r:${Math.min(...progress)}%` : ''}`;
  }
  const v = s.state.specs.VolumeSpec?.get(volumeId);
  const nexus = v ? healthInfoNexusId(v) : null;
  const info = nexus ? s.state.nexusInfo.get(volumeId)?.find((i) => i.nexusId === nexus) : undefined;
  if (!info) return `-/${want}`;
  return `${info.info.children.filter((c) => c.healthy).length}/${want}`;
}

/** Volumes; `compact` (under 100 columns) shows uuids by their first 8 digits, as the event log does. */
export function volumeTable(s: Snapshot, compact = false): Table {
  return lazyTable(
    [
      { header: 'VOLUME', width: compact ? 9 : 37 },
      { header: 'STATUS', width: 9 },
      { header: 'SIZE', width: 7 },
      { header: 'REPLICAS', width: 10 },
      { header: 'TARGET', width: 9 },
      { header: 'URI' },
    ],
    s.state.specs.VolumeSpec,
    (id, v) => {
      const live = s.live?.volumes.get(id);
      const status = live?.state.status ?? volumeStatus(s.state, v);
      return {
        cells: [
          compact ? id.slice(0, 8) : id,
          status,
          humanizeBytes(v.size),
          replicaText(s, id, v.num_replicas),
          volumeTargetNode(v) ?? '-',
          live?.state.target?.deviceUri || '-',
        ],
        tone: toneOf(status),
      };
    },
  );
}

export function switchoverTable(s: Snapshot): Table {
  return lazyTable(
    [
      { header: 'VOLUME', width: 37 },
      { header: 'NODE', width: 10 },
      { header: 'STAGE', width: 16 },
      { header: 'TRIES', width: 6 },
      { header: 'SINCE' },
    ],
    s.state.specs.SwitchOver,
    (id, sw) => {
      const stage = switchOverStageName(sw) ?? '-';
      return {
        cells: [id, sw.node_name, stage, String(sw.retry_count), sw.timestamp],
        tone: stage === 'Errored' ? 'bad' : stage === 'Successful' ? 'ok' : 'warn',
      };
    },
  );
}

export function mountTable(s: Snapshot): Table {
  const records = new Map((s.mounts?.kind === 'records' ? s.mounts.mounts : []).map((m) => [m.target, m]));
  return lazyTable(
    [
      { header: 'TARGET', width: 34 },
      { header: 'VOLUME', width: 14 },
      { header: 'BUCKET', width: 12 },
      { header: 'DAEMON' },
    ],
    records,
    (_, m) => ({
      cells: [
        m.target,
        m.volumeId,
        m.bucket,
        `${m.daemon.kind} ${m.daemon.unit ?? m.daemon.pid ?? ''} ${m.readonly ? 'ro' : 'rw'}`,
      ],
    }),
  );
}

/** Ids of the rows whose cells contain the filter text (case-insensitive); all without a filter. */
export function filterIds(table: Table, filter: string): string[] {
  if (!filter) return table.ids;
  const f = filter.toLowerCase();
  return table.ids.filter(
    (id) => id.toLowerCase().includes(f) || table.row(id).cells.some((c) => c.toLowerCase().includes(f)),
  );
}
