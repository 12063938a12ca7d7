import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../../lib/atomic-file.js';
import { ConflictError } from '../../lib/errors.js';
import { isSameProcessAlive } from '../../lib/mount/processes.js';
import { CSI_NODE_CLAIM } from '../../lib/orphans/csi-node-state.js';
import { claimDirectory, type HeldClaim } from '../../lib/process-claim.js';
import type { AttachedDevice } from './attacher.js';
import type { ProxyRef } from './proxy.js';

/** One published target of a staged volume. */
export interface PublishRecord {
  readonly: boolean;
  block: boolean;
}

/** What csi-node attached for one staged volume: enough to find, serve and undo all of it after a restart. */
export interface StagedVolume {
  volumeId: string;
  /** The volume's own directory under the state dir (proxy sockets, FUSE mount point, logs). */
  dir: string;
  stagingPath: string;
  /** The target URI the proxy forwards to (nbd://host:port/<export>). */
  target: string;
  block: boolean;
  fsType?: string;
  mountFlags: string[];
  accessMode: string;
  /** Bytes the block device shows. */
  size: number;
  proxy?: ProxyRef;
  device?: AttachedDevice;
  /** True once the filesystem is mounted at stagingPath (or, for block, the device is ready). */
  staged: boolean;
  publishes: Record<string, PublishRecord>;
  /** Epoch ms by which csi-node thaws a frozen filesystem by itself. */
  frozenUntil?: number;
  stagedAt: string;
}

/** Whether a volume is staged read-only: asked for with `ro`, or for a reader-only access mode. */
export const stagedReadOnly = (v: { mountFlags: string[]; accessMode: string }) =>
  v.mountFlags.includes('ro') || v.accessMode.endsWith('READER_ONLY');

interface StateFile {
  version: 1;
  /** Written by csi-nodes of an earlier version, which kept no claim file: read, never written. */
  owner?: { pid: number; pidStartTime?: string; endpoint: string };
  volumes: Record<string, StagedVolume>;
}

/**
 * csi-node's state file: every staged volume, rewritten atomically (temp file, fsync, rename; 0600)
 * on each change, changes serialised so concurrent RPCs cannot lose one another's.
 */
export class NodeState {
  private volumes = new Map<string, StagedVolume>();
  private chain: Promise<void> = Promise.resolve();

  private constructor(
    readonly file: string,
    /** This process's claim on the state directory, released by `close`. */
    private readonly claim: HeldClaim,
  ) {}

  /**
   * Claim the state directory for this process (refused while another live csi-node keeps it: two
   * would each undo what the other attached), then read the file, and write it at once even with
   * nothing staged (`storctl orphans` tells "staged nothing" from "no csi-node here").
   */
  static async load(file: string, endpoint: string): Promise<NodeState> {
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const inUse = (other: { pid: number; endpoint: string }) =>
      new ConflictError(
        'STATE_DIR_IN_USE',
        `csi-node pid ${other.pid} (${other.endpoint}) already keeps ${file}: two csi-nodes on one state directory would undo each other's mounts`,
        { suggestions: ['stop that csi-node first, or give this one another --state-dir'] },
      );
    const claim = await claimDirectory(dirname(file), CSI_NODE_CLAIM, { endpoint }, inUse);
    try {
      const s = new NodeState(file, claim);
      const stored = await readStateFile(file);
      // A csi-node of an earlier version records itself in the file (no claim file): still running?
      const old = stored?.owner;
      if (old && old.pid !== process.pid && (await isSameProcessAlive(old.pid, old.pidStartTime)))
        throw inUse({ pid: old.pid, endpoint: old.endpoint });
      s.volumes = new Map(Object.entries(stored?.volumes ?? {}));
      await s.update(() => {});
      return s;
    } catch (err) {
      await claim.release();
      throw err;
    }
  }

  get(volumeId: string): StagedVolume | undefined {
    const v = this.volumes.get(volumeId);
    return v && structuredClone(v);
  }

  all(): StagedVolume[] {
    return [...this.volumes.values()].map((v) => structuredClone(v));
  }

  put(v: StagedVolume): Promise<void> {
    return this.update((m) => m.set(v.volumeId, structuredClone(v)));
  }

  /** Change a volume's record if it is still there when the change applies (not deleted meanwhile). */
  patch(volumeId: string, change: Partial<StagedVolume>): Promise<void> {
    return this.update((m) => {
      const v = m.get(volumeId);
      if (v) m.set(volumeId, { ...v, ...structuredClone(change) });
    });
  }

  delete(volumeId: string): Promise<void> {
    return this.update((m) => m.delete(volumeId));
  }

  /** Let the state directory go (after the last change): another csi-node may keep it now. */
  async close(): Promise<void> {
    await this.chain;
    await this.claim.release();
  }

  private update(change: (m: Map<string, StagedVolume>) => void): Promise<void> {
    const next = this.chain.then(async () => {
      change(this.volumes);
      const body: StateFile = { version: 1, volumes: Object.fromEntries(this.volumes) };
      await writeFileAtomic(this.file, `${JSON.stringify(body, null, 2)}\n`);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}

async function readStateFile(file: string): Promise<StateFile | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as StateFile;
    if (parsed.version !== 1) throw new Error(`unknown version ${String(parsed.version)}`);
    return parsed;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read csi-node state file ${file}: ${(err as Error).message}`);
  }
}
