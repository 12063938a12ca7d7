import { volumeStatus } from '../catalog/views/volumes.js';
import { humanizeBytes } from '../output/humanize.js';
import {
  createdState,
  drainStateText,
  healthInfoNexusId,
  nodeStatusText,
  replicaPoolName,
  specStatusName,
  switchOverStageName,
  volumeTargetNode,
} from '../specs/index.js';
import { poolBar } from './bar.js';
import type { Snapshot } from './model.js';

export type Tone = 'ok' | 'warn' | 'bad' | undefined;

/** One row of a panel: its id (what enter opens), its cells, and the tone of its status cell. */
export interface Row {
  id: string;
  cells: string[];
  tone?: Tone;
}

export interface Column {
  header: string;
  /** Fixed width; the column without one takes what is left. */
  width?: number;
}

export interface Table {
  columns: Column[];
  rows: Row[];
}

const toneOf = (status: string): Tone =>
  /^(Online|Created|online|healthy)/.test(status)
    ? 'ok'
    : /Offline|Faulted|Unknown|Errored/.test(status)
      ? 'bad'
      : 'warn';

const sorted = <V>(map: Map<string, V> | undefined): [string, V][] =>
  map ? [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : [];

export function nodeTable(s: Snapshot): Table {
  return {
    columns: [{ header: 'NODE', width: 16 }, { header: 'STATUS', width: 28 }, { header: 'ENDPOINT' }],
    rows: sorted(s.state.specs.NodeSpec).map(([id, n]) => {
      const live = s.state.liveness.get(id);
      const status = nodeStatusText(n, live ? 'Online' : 'Offline');
      const drain = drainStateText(n);
      return {
        id,
        cells: [id, status, `${n.endpoint}${live?.nbdEndpoint ? `  nbd ${live.nbdEndpoint}` : ''}`],
        tone: !live ? 'bad' : status === 'Online' && drain === 'Not draining' ? 'ok' : 'warn',
      };
    }),
  };
}

export function poolTable(s: Snapshot, barWidth: number): Table {
  const committed = new Map<string, number>();
  for (const r of s.state.specs.ReplicaSpec?.values() ?? []) {
    const pool = replicaPoolName(r);
    committed.set(pool, (committed.get(pool) ?? 0) + r.size);
  }
  return {
    columns: [
      { header: 'POOL', width: 14 },
      { header: 'NODE', width: 10 },
      { header: 'STATUS', width: 8 },
      { header: 'USED / COMMITTED / CAPACITY', width: barWidth + 1 },
      { header: 'NUMBERS' },
    ],
    rows: sorted(s.state.specs.PoolSpec).map(([id, p]) => {
      const created = createdState(p.status);
      const status =
        created === null ? specStatusName(p.status) : s.state.liveness.has(p.node) ? created : 'Unknown';
      const live = s.live?.pools.get(id);
      const c = committed.get(id) ?? 0;
      const numbers = live
        ? `${humanizeBytes(live.used)} / ${humanizeBytes(c)} / ${humanizeBytes(live.capacity)}`
        : `? / ${humanizeBytes(c)} / ? (core not reachable)`;
      return {
        id,
        cells: [id, p.node, status, poolBar(live?.used, c, live?.capacity, barWidth), numbers],
        tone: toneOf(status),
      };
    }),
  };
}

/** Replica health of a volume: `healthy/total` and the lowest rebuild progress while rebuilding. */
function replicaText(s: Snapshot, volumeId: string, want: number): string {
  const topology = s.live?.volumes.get(volumeId)?.state.replica_topology;
  if (topology) {
    const reps = Object.values(topology);
    const healthy = reps.filter((r) => r['child-status'] === 'Online' || r.state === 'Online').length;
    const progress = reps.flatMap((r) =>
      r['rebuild-progress'] === undefined ? [] : [r['rebuild-progress']],
    );
    return `${healthy}/${want}${progress.length ? ` rebuild ${Math.min(...progress)}%` : ''}`;
  }
  const v = s.state.specs.VolumeSpec?.get(volumeId);
  const nexus = v ? healthInfoNexusId(v) : null;
  const info = nexus ? s.state.nexusInfo.get(volumeId)?.find((i) => i.nexusId === nexus) : undefined;
  if (!info) return `-/${want}`;
  return `${info.info.children.filter((c) => c.healthy).length}/${want}`;
}

export function volumeTable(s: Snapshot): Table {
  return {
    columns: [
      { header: 'VOLUME', width: 37 },
      { header: 'STATUS', width: 10 },
      { header: 'SIZE', width: 9 },
      { header: 'REPLICAS', width: 17 },
      { header: 'TARGET', width: 10 },
      { header: 'URI' },
    ],
    rows: sorted(s.state.specs.VolumeSpec).map(([id, v]) => {
      const live = s.live?.volumes.get(id);
      const status = live?.state.status ?? volumeStatus(s.state, v);
      return {
        id,
        cells: [
          id,
          status,
          humanizeBytes(v.size),
          replicaText(s, id, v.num_replicas),
          volumeTargetNode(v) ?? '-',
          live?.state.target?.deviceUri || '-',
        ],
        tone: toneOf(status),
      };
    }),
  };
}

export function switchoverTable(s: Snapshot): Table {
  return {
    columns: [
      { header: 'VOLUME', width: 37 },
      { header: 'NODE', width: 10 },
      { header: 'STAGE', width: 18 },
      { header: 'RETRIES', width: 8 },
      { header: 'SINCE' },
    ],
    rows: sorted(s.state.specs.SwitchOver).map(([id, sw]) => {
      const stage = switchOverStageName(sw) ?? '-';
      return {
        id,
        cells: [id, sw.node_name, stage, String(sw.retry_count), sw.timestamp],
        tone: stage === 'Errored' ? 'bad' : stage === 'Completed' ? 'ok' : 'warn',
      };
    }),
  };
}

export function mountTable(s: Snapshot): Table {
  const records = s.mounts?.kind === 'records' ? s.mounts.mounts : [];
  return {
    columns: [
      { header: 'TARGET', width: 34 },
      { header: 'VOLUME', width: 14 },
      { header: 'BUCKET', width: 12 },
      { header: 'DAEMON' },
    ],
    rows: records.map((m) => ({
      id: m.target,
      cells: [
        m.target,
        m.volumeId,
        m.bucket,
        `${m.daemon.kind} ${m.daemon.unit ?? m.daemon.pid ?? ''} ${m.readonly ? 'ro' : 'rw'}`,
      ],
    })),
  };
}

/** Rows whose cells contain the filter text (case-insensitive); all rows without a filter. */
export function filterRows(rows: Row[], filter: string): Row[] {
  if (!filter) return rows;
  const f = filter.toLowerCase();
  return rows.filter((r) => r.cells.some((c) => c.toLowerCase().includes(f)));
}
