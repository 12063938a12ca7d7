import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../../lib/atomic-file.js';
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
  volumes: Record<string, StagedVolume>;
}

/**
 * csi-node's state file: every staged volume, rewritten atomically (temp file, fsync, rename; 0600)
 * on each change, changes serialised so concurrent RPCs cannot lose one another's.
 */
export class NodeState {
  private volumes = new Map<string, StagedVolume>();
  private chain: Promise<void> = Promise.resolve();

  private constructor(readonly file: string) {}

  static async load(file: string): Promise<NodeState> {
    const s = new NodeState(file);
    await mkdir(dirname(file), { recursive: true, mode: 0o700 });
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as StateFile;
      if (parsed.version !== 1) throw new Error(`unknown version ${String(parsed.version)}`);
      s.volumes = new Map(Object.entries(parsed.volumes ?? {}));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        throw new Error(`cannot read csi-node state file ${file}: ${(err as Error).message}`);
      // Written at once, empty: `storctl orphans` tells "staged nothing" from "no csi-node here".
      await s.update(() => {});
    }
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
      const body: StateFile = { version: 1, volumes: Object.fromEntries(this.volumes) };
      await writeFileAtomic(this.file, `${JSON.stringify(body, null, 2)}\n`);
    });
    this.chain = next.catch(() => {});
    return next;
  }
}
