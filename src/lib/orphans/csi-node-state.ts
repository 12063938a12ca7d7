import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import { defaultDataDir } from '../paths.js';
import { type Claimant, liveClaimant } from '../process-claim.js';

/**
 * The parts of csi-node's state file (`<state-dir>/state.json`, version 1) that `storctl orphans`
 * reads: what csi-node staged, where, and the processes and devices behind it. Read leniently (a
 * field this reader does not know is kept as it is when an entry is removed); written back only to
 * drop entries, atomically.
 */
export interface CsiNodeVolume {
  volumeId: string;
  /** The volume's own directory under the state dir. */
  dir?: string;
  stagingPath?: string;
  target?: string;
  block?: boolean;
  proxy?: { pid: number; pidStartTime?: string; socketPath?: string; controlPath?: string };
  device?: {
    kind: string;
    device: string;
    fuseDir?: string;
    file?: string;
    fusePid?: number;
    fusePidStartTime?: string;
  };
  staged?: boolean;
  publishes?: Record<string, { readonly?: boolean; block?: boolean }>;
  stagedAt?: string;
  [field: string]: unknown;
}

/**
 * In the state directory: the claim files (`csi-node.claim.N`, lib/process-claim.ts) naming the
 * csi-node that keeps it. While that process runs, what it staged is undone through it, never
 * behind its back.
 */
export const CSI_NODE_CLAIM = 'csi-node.claim';

/** The csi-node that keeps a state directory. */
export type CsiNodeStateOwner = Claimant<{
  /** Its CSI socket, `unix:///…`. */
  endpoint: string;
}>;

export interface CsiNodeState {
  file: string;
  stateDir: string;
  owner?: CsiNodeStateOwner;
  volumes: CsiNodeVolume[];
}

/** csi-node's default state directory: `$STORCTL_CSI_NODE_STATE_DIR`, else `<data dir>/csi-node`. */
export function defaultCsiNodeStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.STORCTL_CSI_NODE_STATE_DIR || join(defaultDataDir(env), 'csi-node');
}

export const stateFileOf = (stateDir: string) => join(stateDir, 'state.json');

/** The state file of `stateDir`, or null when there is none (no csi-node ever ran with it). */
export async function readCsiNodeState(stateDir: string): Promise<CsiNodeState | null> {
  const file = stateFileOf(stateDir);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new Error(`cannot read csi-node state file ${file}: ${(err as Error).message}`);
  }
  const parsed = parseState(file, text);
  const claimant = await liveClaimant<{ endpoint: unknown }>(stateDir, CSI_NODE_CLAIM);
  const owner =
    typeof claimant?.endpoint === 'string' ? { ...claimant, endpoint: claimant.endpoint } : undefined;
  return { file, stateDir, owner, volumes: Object.values(parsed.volumes) };
}

function parseState(file: string, text: string): { version: 1; volumes: Record<string, CsiNodeVolume> } {
  let parsed: { version?: unknown; volumes?: unknown };
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`csi-node state file ${file} is not JSON: ${(err as Error).message}`);
  }
  if (parsed?.version !== 1)
    throw new Error(
      `csi-node state file ${file} has version ${String(parsed?.version)}; this storctl reads 1`,
    );
  const volumes = (parsed.volumes ?? {}) as Record<string, CsiNodeVolume>;
  for (const [id, v] of Object.entries(volumes))
    if (!v || typeof v !== 'object' || v.volumeId !== id)
      throw new Error(`csi-node state file ${file}: entry '${id}' does not name its volume`);
  return { ...parsed, version: 1, volumes };
}

/**
 * Drop one entry from the state file, only if it is still the entry that was cleaned up (same
 * `stagedAt`): a volume csi-node staged again meanwhile is left alone. Temp file + rename, 0600.
 */
export async function dropCsiNodeEntry(stateDir: string, entry: CsiNodeVolume): Promise<boolean> {
  const file = stateFileOf(stateDir);
  const state = parseState(file, await readFile(file, 'utf8'));
  const now = state.volumes[entry.volumeId];
  if (!now || now.stagedAt !== entry.stagedAt) return false;
  delete state.volumes[entry.volumeId];
  await writeFileAtomic(file, `${JSON.stringify(state, null, 2)}\n`);
  return true;
}
