import { mkdir, open, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';
import type { Logger } from '../../lib/logger.js';
import { probePath } from '../../lib/mount/health.js';
import { isSameProcessAlive } from '../../lib/mount/processes.js';
import { uuidV5 } from '../../lib/mount/unit-name.js';
import { isMountPoint, unmountAll } from '../../lib/mount/unmount.js';
import { SerialByKey } from '../../lib/serial-by-key.js';
import { type Attacher, attacherFor } from './attacher.js';
import { Freezer } from './freeze.js';
import {
  bindMount,
  checkExt4,
  deviceSize,
  type FsType,
  fsTypeOf,
  fsUsage,
  growExt4Offline,
  growFs,
  mkfs,
  mountFs,
} from './fs-ops.js';
import { proxyGone, volumeHealth } from './health.js';
import {
  type ProxyRef,
  probeProxy,
  proxyStatus,
  refreshProxy,
  repointProxy,
  startProxy,
  stopProxy,
} from './proxy.js';
import { type NodeState, type StagedVolume, stagedReadOnly } from './state.js';
import { sweepVolumeDir } from './sweep.js';

export interface StageRequest {
  volumeId: string;
  stagingPath: string;
  target: string;
  block: boolean;
  fsType: FsType;
  mountFlags: string[];
  accessMode: string;
}

export interface PublishRequest {
  volumeId: string;
  stagingPath: string;
  targetPath: string;
  block: boolean;
  readonly: boolean;
}

const failedPrecondition = (m: string) => new GrpcError(status.FAILED_PRECONDITION, m);
const notFound = (m: string) => new GrpcError(status.NOT_FOUND, m);
const alreadyExists = (m: string) => new GrpcError(status.ALREADY_EXISTS, m);

/**
 * Every block volume staged on this node: proxy → block device → filesystem → bind mounts, each
 * step recorded in the state file as it is made so that a restart (or a failure half-way) can find
 * and undo it. One operation per volume at a time (a second concurrent one is ABORTED).
 */
export class BlockVolumes {
  private readonly busy = new Set<string>();
  /**
   * Re-points of a volume, one at a time. Apart from `exclusive`: an unstage (or stage) whose
   * filesystem flush waits on a dead path holds the volume, and only re-pointing the path (HA's
   * ReplacePath) lets that flush finish.
   */
  private readonly pathChanges = new SerialByKey();
  readonly freezer: Freezer;

  constructor(
    private readonly cfg: {
      stateDir: string;
      state: NodeState;
      attacher: Attacher;
      log: Logger;
      pathTimeoutMs: number;
    },
  ) {
    this.freezer = new Freezer(cfg.state, cfg.log);
  }

  private get state() {
    return this.cfg.state;
  }

  /** After a restart: log what was found, and re-arm (or carry out) the self-thaw of frozen filesystems. */
  async adopt(): Promise<{ volumes: number; healthy: number }> {
    let healthy = 0;
    const all = this.state.all();
    for (const v of all) {
      const h = await volumeHealth(v);
      if (!h.abnormal) healthy++;
      this.cfg.log.info({ volumeId: v.volumeId, staged: v.staged, ...h }, 'found staged volume');
      this.freezer.rearm(v);
    }
    return { volumes: all.length, healthy };
  }

  /** Run `fn` as the only operation on `volumeId`; another one in flight answers ABORTED. */
  async exclusive<T>(volumeId: string, fn: () => Promise<T>): Promise<T> {
    if (this.busy.has(volumeId))
      throw new GrpcError(status.ABORTED, `an operation on volume ${volumeId} is already in progress`);
    this.busy.add(volumeId);
    try {
      return await fn();
    } finally {
      this.busy.delete(volumeId);
    }
  }

  get(volumeId: string): StagedVolume | undefined {
    return this.state.get(volumeId);
  }

  async stage(r: StageRequest): Promise<void> {
    const existing = this.state.get(r.volumeId);
    if (existing) {
      if (existing.stagingPath !== r.stagingPath)
        throw alreadyExists(
          `volume ${r.volumeId} is staged at ${existing.stagingPath}, not at ${r.stagingPath}`,
        );
      if (existing.block !== r.block)
        throw alreadyExists(
          `volume ${r.volumeId} is staged as ${existing.block ? 'a raw block device' : 'a filesystem'}; the request asks for ${r.block ? 'block' : 'mount'} access`,
        );
      if (!r.block && existing.fsType !== r.fsType)
        throw alreadyExists(`volume ${r.volumeId} is staged with ${existing.fsType}, not ${r.fsType}`);
      if (existing.staged) {
        const h = await volumeHealth(existing);
        if (!h.abnormal || h.pathDown) {
          if (existing.target !== r.target) await this.repoint(r.volumeId, r.target);
          return;
        }
        this.cfg.log.warn(
          { volumeId: r.volumeId, problem: h.message },
          'staged volume is broken: staging it again',
        );
      }
      await this.teardown(existing, { force: true });
    }
    await this.stageFresh(r);
  }

  private async stageFresh(r: StageRequest): Promise<void> {
    const dir = join(this.cfg.stateDir, 'v', uuidV5(r.volumeId));
    // A directory left without a record (a crash between two steps): what it holds goes first.
    await sweepVolumeDir(dir);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const v: StagedVolume = {
      volumeId: r.volumeId,
      dir,
      stagingPath: r.stagingPath,
      target: r.target,
      block: r.block,
      fsType: r.block ? undefined : r.fsType,
      mountFlags: r.mountFlags,
      accessMode: r.accessMode,
      size: 0,
      staged: false,
      publishes: {},
      stagedAt: new Date().toISOString(),
    };
    await this.state.put(v);
    try {
      let proxy: ProxyRef;
      try {
        proxy = await startProxy({
          dir,
          target: r.target,
          advertisedSize: this.cfg.attacher.advertisedSize(0),
          pathTimeoutMs: this.cfg.pathTimeoutMs,
        });
      } catch (err) {
        // The target does not answer or has no such export: the volume is not reachable from here.
        throw notFound(`volume ${r.volumeId}: ${(err as Error).message}`);
      }
      v.proxy = proxy;
      const st = await proxyStatus(proxy);
      v.size = st?.size ?? 0;
      await this.state.put(v);
      v.device = await this.cfg.attacher.attach({ dir, proxy, size: v.size });
      await this.state.put(v);
      this.cfg.log.info({ volumeId: r.volumeId, ...v.device }, 'attached');
      if (!r.block) {
        const found = await fsTypeOf(v.device.device);
        if (!found) {
          this.cfg.log.info(
            { volumeId: r.volumeId, device: v.device.device, fsType: r.fsType },
            'formatting',
          );
          await mkfs(v.device.device, r.fsType);
        } else if (found !== r.fsType) {
          throw failedPrecondition(
            `volume ${r.volumeId} already holds a ${found} filesystem; the request asks for ${r.fsType}`,
          );
        }
        if (found === 'ext4' && !stagedReadOnly(r)) await checkExt4(v.device.device);
        // A volume grown while it was not staged (or whose ext4 could not grow online): grow it now.
        if (found === 'ext4' && (await growExt4Offline(v.device.device)))
          this.cfg.log.info({ volumeId: r.volumeId }, 'ext4 grown to the device size before mounting');
        await mkdir(r.stagingPath, { recursive: true, mode: 0o750 });
        await mountFs(v.device.device, r.stagingPath, r.fsType, r.mountFlags);
        if (found === 'xfs') await growFs('xfs', v.device.device, r.stagingPath);
      }
      v.staged = true;
      await this.state.put(v);
      this.cfg.log.info(
        {
          volumeId: r.volumeId,
          device: v.device.device,
          staging: r.stagingPath,
          target: r.target,
          size: v.size,
        },
        'staged',
      );
    } catch (err) {
      await this.teardown(v, { force: true }).catch((e) =>
        this.cfg.log.warn(
          { volumeId: r.volumeId, err: (e as Error).message },
          'cleanup after a failed stage failed',
        ),
      );
      throw err;
    }
  }

  /**
   * Point a staged volume's path at another target (a new nexus after a switchover): the proxy
   * connects there and swaps; the block device, the filesystem and every publish stay.
   */
  async repoint(volumeId: string, target: string): Promise<void> {
    return this.pathChanges.run(volumeId, async () => {
      const v = this.state.get(volumeId);
      if (!v?.proxy) throw notFound(`volume ${volumeId} is not staged on this node`);
      await repointProxy(v.proxy, target);
      // An unstage may have ended meanwhile: its record stays deleted.
      await this.state.patch(volumeId, { target });
      this.cfg.log.info({ volumeId, target }, 're-pointed');
    });
  }

  /**
   * HA: point the volume's path at `target` (unless it already does) and check that a read through
   * it answers within `verifyMs`, retrying while the proxy connects. Idempotent.
   */
  async replacePath(volumeId: string, target: string, verifyMs: number): Promise<void> {
    const v = this.state.get(volumeId);
    if (!v?.proxy)
      throw new GrpcError(status.FAILED_PRECONDITION, `volume ${volumeId} is not staged on this node`);
    if (v.target !== target) {
      try {
        await this.repoint(volumeId, target);
      } catch (err) {
        throw new GrpcError(
          status.UNAVAILABLE,
          `cannot re-point volume ${volumeId} to ${target}: ${(err as Error).message}`,
        );
      }
    }
    const deadline = Date.now() + verifyMs;
    for (;;) {
      const probe = await probeProxy(v.proxy, Math.max(50, deadline - Date.now())).catch((err: Error) => ({
        ok: false,
        error: err.message,
      }));
      if (probe.ok) return;
      if (Date.now() >= deadline)
        throw new GrpcError(
          status.UNAVAILABLE,
          `volume ${volumeId}: no I/O through ${target}: ${probe.error}`,
        );
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Every staged volume's path, each probed with one read when `probeMs` > 0. A volume still being
   * staged (or unstaged) is left out: its path is not in use yet, and judging it would start a
   * switchover of a volume nobody has lost.
   */
  async paths(probeMs: number) {
    return Promise.all(
      this.state
        .all()
        .filter((v) => v.staged && v.proxy)
        .map(async (v) => {
          const path = {
            volume_id: v.volumeId,
            target_uri: v.target,
            probed: false,
            ok: false,
            error: '',
            probe_ms: 0,
            local: false,
          };
          if (!v.proxy) return { ...path, error: 'no path proxy recorded', local: true };
          if (probeMs <= 0) return path;
          const probe = await probeProxy(v.proxy, probeMs).catch((err: Error) => ({
            ok: false,
            error: err.message,
            ms: 0,
          }));
          if (!probe.ok && !(await isSameProcessAlive(v.proxy.pid, v.proxy.pidStartTime)))
            return { ...path, probed: true, error: proxyGone(v.proxy.pid), local: true };
          return { ...path, probed: true, ok: probe.ok, error: probe.error ?? '', probe_ms: probe.ms };
        }),
    );
  }

  /** Undo everything staged for `v`: mounts, device, proxy, its directory and its record. */
  private async teardown(v: StagedVolume, { force }: { force: boolean }): Promise<void> {
    await this.freezer.release(v);
    if (force) for (const t of Object.keys(v.publishes)) await unmountAll(t).catch(() => {});
    if (!v.block) await unmountAll(v.stagingPath);
    if (v.device) await attacherFor(v.device).detach(v.device);
    if (v.proxy) await stopProxy(v.proxy);
    const swept = await sweepVolumeDir(v.dir);
    if (swept.length) this.cfg.log.warn({ volumeId: v.volumeId, swept }, 'stopped unrecorded processes');
    await rm(v.dir, { recursive: true, force: true });
    await this.state.delete(v.volumeId);
  }

  async unstage(volumeId: string, stagingPath: string): Promise<void> {
    const v = this.state.get(volumeId);
    if (!v || v.stagingPath !== stagingPath) return; // not staged there: nothing to do (spec: OK)
    for (const t of Object.keys(v.publishes)) {
      if (await isMountPoint(t))
        throw failedPrecondition(`volume ${volumeId} is still published at ${t}; unpublish it first`);
    }
    await this.teardown(v, { force: false });
    this.cfg.log.info({ volumeId, staging: stagingPath }, 'unstaged');
  }

  async publish(r: PublishRequest): Promise<void> {
    const v = this.state.get(r.volumeId);
    if (!v?.staged)
      throw failedPrecondition(`volume ${r.volumeId} is not staged on this node (NodeStageVolume first)`);
    if (v.stagingPath !== r.stagingPath)
      throw failedPrecondition(`volume ${r.volumeId} is staged at ${v.stagingPath}, not at ${r.stagingPath}`);
    if (v.block !== r.block)
      throw failedPrecondition(
        `volume ${r.volumeId} is staged for ${v.block ? 'block' : 'mount'} access; the request asks for ${r.block ? 'block' : 'mount'}`,
      );
    const h = await volumeHealth(v);
    if (h.abnormal && !h.pathDown)
      throw new GrpcError(
        status.UNAVAILABLE,
        `volume ${r.volumeId} is staged but broken (${h.message}); stage it again`,
      );
    const prev = v.publishes[r.targetPath];
    if (prev && prev.readonly !== r.readonly)
      throw alreadyExists(
        `volume ${r.volumeId} is published at ${r.targetPath} ${prev.readonly ? 'read-only' : 'read-write'}`,
      );
    if (await isMountPoint(r.targetPath)) {
      const p = await probePath(r.targetPath);
      if (prev && (p.state === 'ok' || (r.block && p.state !== 'corrupted'))) return;
      // A dead or foreign layer: peel it off and bind again.
      if (prev || p.state === 'corrupted') await unmountAll(r.targetPath);
      else throw alreadyExists(`${r.targetPath} is already a mount point of something else`);
    }
    const source = v.block ? v.device!.device : v.stagingPath;
    if (v.block) {
      await mkdir(dirname(r.targetPath), { recursive: true, mode: 0o750 });
      await (await open(r.targetPath, 'a', 0o600)).close();
    } else {
      await mkdir(r.targetPath, { recursive: true, mode: 0o750 });
    }
    // Recorded before the bind: a crash in between leaves a record the next publish or unpublish completes.
    v.publishes[r.targetPath] = { readonly: r.readonly, block: r.block };
    await this.state.put(v);
    try {
      await bindMount(source, r.targetPath, r.readonly);
    } catch (err) {
      delete v.publishes[r.targetPath];
      await this.state.put(v);
      throw err;
    }
    this.cfg.log.info({ volumeId: r.volumeId, target: r.targetPath, readonly: r.readonly }, 'published');
  }

  async unpublish(volumeId: string, targetPath: string): Promise<void> {
    const v = this.state.get(volumeId);
    const rec = v?.publishes[targetPath];
    // Only what this volume published is undone here: a staging path (NodeUnstageVolume's) or
    // another volume's target is never unmounted or removed by an unpublish that names it.
    if (!rec) {
      for (const other of this.state.all()) {
        if (other.stagingPath === targetPath)
          throw new GrpcError(
            status.INVALID_ARGUMENT,
            `target_path ${targetPath} is the staging path of volume ${other.volumeId}, not a published target; NodeUnstageVolume tears it down`,
          );
        if (other.volumeId !== volumeId && other.publishes[targetPath])
          throw failedPrecondition(
            `target_path ${targetPath} is published for volume ${other.volumeId}, not for ${volumeId}`,
          );
      }
    }
    await unmountAll(targetPath);
    // Remove what we created at the target: an empty directory, or the empty file of a block publish.
    try {
      const s = await stat(targetPath);
      if (s.isDirectory()) await rmdir(targetPath);
      else if (rec?.block && s.isFile() && s.size === 0) await unlink(targetPath);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') this.cfg.log.warn({ targetPath, code }, 'target left in place');
    }
    if (v && rec) {
      delete v.publishes[targetPath];
      await this.state.put(v);
    }
    this.cfg.log.info({ volumeId, target: targetPath }, 'unpublished');
  }

  /** The staged volume whose staging path or a published target is `path`; NOT_FOUND otherwise. */
  located(volumeId: string, path: string): StagedVolume {
    const v = this.state.get(volumeId);
    if (!v) throw notFound(`volume ${volumeId} is not staged on this node`);
    if (v.stagingPath !== path && !v.publishes[path])
      throw notFound(`volume ${volumeId} is neither staged nor published at ${path}`);
    return v;
  }

  async stats(volumeId: string, path: string) {
    const v = this.located(volumeId, path);
    const h = await volumeHealth(v);
    const condition = { abnormal: h.abnormal, message: h.message };
    // A publish whose bind mount is gone would report the stats of whatever holds the directory.
    if (path !== v.stagingPath && !(await isMountPoint(path)))
      return { usage: [], volume_condition: { abnormal: true, message: `${path} is not mounted` } };
    if (v.block || v.publishes[path]?.block) {
      const total = v.device ? await deviceSize(v.device.device).catch(() => v.size) : v.size;
      return { usage: [{ unit: 'BYTES', total: String(total) }], volume_condition: condition };
    }
    try {
      const u = await fsUsage(path);
      return {
        usage: [
          {
            unit: 'BYTES',
            total: String(u.totalBytes),
            available: String(u.availableBytes),
            used: String(u.usedBytes),
          },
          {
            unit: 'INODES',
            total: String(u.totalInodes),
            available: String(u.freeInodes),
            used: String(u.usedInodes),
          },
        ],
        volume_condition: condition,
      };
    } catch (err) {
      return {
        usage: [],
        volume_condition: {
          abnormal: true,
          message: `${path}: ${(err as NodeJS.ErrnoException).code ?? err}`,
        },
      };
    }
  }

  /** Grow the device to the target's current size, then the filesystem; returns the device's bytes. */
  async expand(volumeId: string, path: string, requiredBytes: number): Promise<number> {
    const v = this.located(volumeId, path);
    if (!v.proxy || !v.device) throw failedPrecondition(`volume ${volumeId} is not fully staged`);
    const st = await refreshProxy(v.proxy).catch((err: Error) => {
      // Its target is gone or unreachable (unpublished, its node down): retryable, not a fault here.
      throw new GrpcError(
        status.UNAVAILABLE,
        `volume ${volumeId}: its target ${v.target} does not answer, so its new size is unknown (${err.message}); retry once the volume is published and its path is back`,
      );
    });
    if (requiredBytes > st.size)
      throw new GrpcError(
        status.OUT_OF_RANGE,
        `volume ${volumeId} is ${st.size} bytes at its target; ${requiredBytes} were asked for (ControllerExpandVolume first)`,
      );
    const attacher = attacherFor(v.device);
    if ((await deviceSize(v.device.device)) < st.size) {
      try {
        await attacher.grow(v.device, st.size);
      } catch (err) {
        throw failedPrecondition(
          `volume ${volumeId}: the block device cannot grow online: ${(err as Error).message}`,
        );
      }
    }
    v.size = st.size;
    await this.state.put(v);
    if (!v.block) {
      try {
        await growFs(v.fsType!, v.device.device, v.stagingPath);
      } catch (err) {
        const msg = (err as Error).message;
        if (v.fsType === 'ext4' && /Permission denied/.test(msg))
          throw failedPrecondition(
            `volume ${volumeId}: the device has grown to ${st.size} bytes, but ext4 cannot grow while mounted here (online resize needs CAP_SYS_RESOURCE, which this process lacks); it grows at the next NodeStageVolume`,
          );
        throw new GrpcError(status.INTERNAL, `growing the filesystem of ${volumeId} failed: ${msg}`);
      }
    }
    this.cfg.log.info({ volumeId, size: st.size }, 'expanded');
    return st.size;
  }

  close(): void {
    this.freezer.close();
  }
}
