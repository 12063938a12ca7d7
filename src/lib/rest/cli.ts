import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from '../cli-args.js';
import { TimeoutError, UsageError } from '../errors.js';
import { humanizeBytes, parseBytes, SIZE_FORMS } from '../output/humanize.js';
import type { Column, Listing } from '../output/render.js';
import type { RestClient } from './client.js';
import type { Node, Pool, Volume } from './types.js';

export function sizeArg(flag: string, text: string): number {
  const n = parseBytes(text);
  if (n === null) throw new UsageError(`--${flag} '${text}' is not a size: use ${SIZE_FORMS}`);
  if (n <= 0) throw new UsageError(`--${flag} '${text}' must be more than 0 bytes (e.g. 1Gi)`);
  return n;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function uuidArg(what: string, text: string): string {
  if (!UUID_RE.test(text))
    throw new UsageError(`${what} '${text}' is not a uuid (e.g. 4e01a5bc-1e2f-4c3d-9a8b-7c6d5e4f3a2b)`);
  return text.toLowerCase();
}

const volumeColumns: Column<Volume>[] = [
  { header: 'ID', get: (v) => v.spec.uuid },
  { header: 'REPLICAS', get: (v) => v.spec.num_replicas },
  { header: 'TARGET-NODE', get: (v) => v.spec.target?.node },
  { header: 'ACCESSIBILITY', get: (v) => v.spec.target?.protocol },
  { header: 'STATUS', get: (v) => v.state.status },
  { header: 'SIZE', get: (v) => humanizeBytes(v.spec.size) },
  { header: 'THIN-PROVISIONED', get: (v) => v.spec.thin },
  { header: 'TARGET', get: (v) => v.state.target?.deviceUri, wide: true },
];

export function volumeListing(rows: Volume[], single = true): Listing<Volume> {
  return { rows, columns: volumeColumns, single };
}

export function nodeListing(rows: Node[]): Listing<Node> {
  return {
    rows,
    single: true,
    columns: [
      { header: 'ID', get: (n) => n.id },
      { header: 'GRPC ENDPOINT', get: (n) => n.state.grpcEndpoint },
      { header: 'STATUS', get: (n) => n.state.status },
      { header: 'CORDONED', get: (n) => n.state.cordoned },
      {
        header: 'CORDON/DRAIN',
        get: (n) => {
          const s = n.spec?.cordondrainstate;
          if (!s) return '';
          const [k, v] = Object.entries(s)[0] as [string, { cordonlabels: string[]; drainlabels?: string[] }];
          return `${k.replace('state', '')}: ${[...v.cordonlabels, ...(v.drainlabels ?? [])].join(',')}`;
        },
      },
      {
        header: 'LABELS',
        get: (n) =>
          Object.entries(n.spec?.labels ?? {})
            .map(([k, v]) => `${k}=${v}`)
            .join(','),
      },
    ],
  };
}

export function poolListing(rows: Pool[]): Listing<Pool> {
  return {
    rows,
    single: true,
    columns: [
      { header: 'ID', get: (p) => p.id },
      { header: 'DISKS', get: (p) => p.spec?.disks.join(', ') },
      { header: 'MANAGED', get: (p) => Boolean(p.spec) },
      { header: 'NODE', get: (p) => p.spec?.node ?? p.state?.node },
      { header: 'STATUS', get: (p) => p.state?.status ?? 'Unknown' },
      { header: 'CAPACITY', get: (p) => (p.state ? humanizeBytes(p.state.capacity) : undefined) },
      { header: 'ALLOCATED', get: (p) => (p.state ? humanizeBytes(p.state.used) : undefined) },
      {
        header: 'AVAILABLE',
        get: (p) => (p.state ? humanizeBytes(Math.max(0, p.state.capacity - p.state.used)) : undefined),
      },
      { header: 'COMMITTED', get: (p) => (p.state ? humanizeBytes(p.state.committed) : undefined) },
    ],
  };
}

/** Progress of a volume's rebuilds, for long operations that print on stderr. */
export function rebuildProgress(v: Volume): { rebuilding: number; percent: number } {
  const children = v.state.target?.children ?? [];
  const rebuilding = children.filter((c) => c.state === 'Degraded');
  const percent = rebuilding.length ? Math.min(...rebuilding.map((c) => c.rebuildProgress ?? 0)) : 100;
  return { rebuilding: rebuilding.length, percent };
}

/**
 * Poll node `nodeId` (last seen as `node`) every 500 ms until core reports it drained, reporting how
 * many volume targets are still on it whenever that number changes; a TimeoutError after `timeoutMs`.
 */
export async function waitDrained(
  client: RestClient,
  nodeId: string,
  node: Node,
  timeoutMs: number,
  progress: (targetsLeft: number) => void,
): Promise<Node> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  while (!node.spec?.cordondrainstate?.drainedstate) {
    const left = (await client.listVolumes()).filter((v) => v.spec.target?.node === nodeId).length;
    if (left !== last) progress(left);
    last = left;
    if (Date.now() > deadline)
      throw new TimeoutError(
        `node ${nodeId} not drained after ${formatDuration(timeoutMs)} (${left} target(s) left)`,
        {
          suggestions: ['see why with `storctl events`'],
        },
      );
    await sleep(500);
    node = await client.getNode(nodeId);
  }
  return node;
}
