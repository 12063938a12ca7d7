import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../../lib/atomic-file.js';
import { ConflictError } from '../../lib/errors.js';
import { isSameProcessAlive, procStat } from '../../lib/mount/processes.js';
import type { CsiNodeStateOwner as StateOwner } from '../../lib/orphans/csi-node-state.js';
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

interface StateFile {
  version: 1;
  owner?: StateOwner;
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
    private readonly owner: StateOwner,
  ) {}

  /**
   * Read the file and record this process as its owner (written at once, even with nothing staged:
   * `storctl orphans` tells "staged nothing" from "no csi-node here"). A file another live csi-node
   * keeps is refused: two would each undo what the other attached.
   */
  static async load(file: string, endpoint: string): Promise<NodeState> {
    const s = new NodeState(file, {
      pid: process.pid,
      pidStartTime: (await procStat(process.pid))?.startTime,
      endpoint,
    });
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    let parsed: StateFile | undefined;
    try {
      parsed = JSON.parse(await readFile(file, 'utf8')) as StateFile;
      if (parsed.version !== 1) throw new Error(`unknown version ${String(parsed.version)}`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new Error(`cannot read csi-node state file ${file}: ${(err as Error).message}`);
    }
    const other = parsed?.owner;
    if (other && other.pid !== process.pid && (await isSameProcessAlive(other.pid, other.pidStartTime)))
      throw new ConflictError(
        'STATE_DIR_IN_USE',
        `csi-node pid ${other.pid} (${other.endpoint}) already keeps ${file}: two csi-nodes on one state directory would undo each other's mounts`,
        { suggestions: ['stop that csi-node first, or give this one another --state-dir'] },
      );
    s.volumes = new Map(Object.entries(parsed?.volumes ?? {}));
    await s.update(() => {});
    return s;
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

  delete(volumeId: string): Promise<void> {
    return this.update((m) => m.delete(volumeId));
  }

  private update(change: (m: Map<string, StagedVolume>) => void): Promise<void> {
    const next = this.chain.then(async () => {
      change(this.volumes);
      const body: StateFile = { version: 1, owner: this.owner, volumes: Object.fromEntries(this.volumes) };
      await writeFileAtomic(this.file, `${JSON.stringify(body, null, 2)}\n`);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}
