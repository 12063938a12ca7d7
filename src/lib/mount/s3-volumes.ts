import { mkdir, open, readdir, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { GrpcError } from '../grpc/status.js';
import type { Logger } from '../logger.js';
import { SerialByKey } from '../serial-by-key.js';
import { makeDirsUnder } from './confine.js';
import { ensureCredentialDir, removeCredentialFiles, type S3Credentials } from './credentials.js';
import { MountConflictError, MountFailedError } from './errors.js';
import { type FuseAdapter, isS3FuseMount } from './fuse-binary.js';
import { probePath } from './health.js';
import type { Mounter } from './mounter.js';
import { mountsAt, readMountTable } from './mountinfo.js';
import type { MountOptions } from './options-policy.js';
import { ProcessMounter } from './process-mounter.js';
import { type MountRecord, MountState } from './state.js';
import { targetId } from './unit-name.js';
import { unmountAll } from './unmount.js';

export interface S3VolumesConfig {
  stateDir: string;
  mounter: Mounter;
  adapter: FuseAdapter;
  endpoint?: string;
  region?: string;
  mountTimeoutMs: number;
  /** How long an unmounted daemon gets to exit by itself before it is stopped. */
  daemonExitTimeoutMs?: number;
  log: Logger;
}

export interface PublishInput {
  volumeId: string;
  target: string;
  bucket: string;
  readonly: boolean;
  options: MountOptions;
  credentials: S3Credentials | undefined;
  /** The root the target was confined to: missing directories are created below it only. */
  root: string;
}

export interface PublishResult {
  reused: boolean;
  recovered: boolean;
  /** Wall time of the call, and the part spent starting the FUSE daemon until the mount answered. */
  totalMs: number;
  daemonMs: number;
}

export const stateLayout = (stateDir: string) => ({
  stateFile: join(stateDir, 'mounts.json'),
  credentialDir: join(stateDir, 'credentials'),
  logDir: join(stateDir, 'logs'),
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function tail(file: string, bytes = 4096): Promise<string> {
  try {
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      const buf = Buffer.alloc(Math.min(bytes, size));
      await fh.read(buf, 0, buf.length, size - buf.length);
      return buf.toString('utf8').replace(/\s+/g, ' ').trim();
    } finally {
      await fh.close();
    }
  } catch {
    return '';
  }
}

/**
 * Publish and unpublish S3 bucket volumes at target paths (seed 004's mount and unmount flows),
 * on top of a Mounter. Calls for one target are serialised; different targets run in parallel.
 */
export class S3Volumes {
  /** Calls for one target are serialised. */
  private readonly byTarget = new SerialByKey();
  private constructor(
    private readonly cfg: S3VolumesConfig,
    readonly state: MountState,
  ) {}

  static async open(cfg: S3VolumesConfig): Promise<S3Volumes> {
    const layout = stateLayout(cfg.stateDir);
    await mkdir(cfg.stateDir, { recursive: true, mode: 0o700 });
    await ensureCredentialDir(layout.credentialDir);
    await mkdir(layout.logDir, { recursive: true, mode: 0o700 });
    return new S3Volumes(cfg, await MountState.load(layout.stateFile));
  }

  private async ourMountAt(target: string) {
    // Any S3 FUSE mount counts, so a mount made before a switch of --fuse-binary is reused, not stacked over.
    return mountsAt(await readMountTable(), target).find((m) => isS3FuseMount(m));
  }

  publish(input: PublishInput): Promise<PublishResult> {
    return this.byTarget.run(input.target, () => this.publishLocked(input));
  }

  private async publishLocked(input: PublishInput): Promise<PublishResult> {
    const t0 = performance.now();
    const { target } = input;
    const id = targetId(target);
    const { credentialDir, logDir } = stateLayout(this.cfg.stateDir);
    let recovered = false;
    let createdDirs: string[] = [];
    // Dry run of the argv first: an option this binary cannot honour fails before anything is written.
    this.cfg.adapter.args({
      bucket: input.bucket,
      target,
      options: input.options,
      readonly: input.readonly,
      logFile: '',
      credentials: { files: [], args: [], env: {} },
    });
    this.cfg.adapter.checkCredentials(input.credentials);

    const health = await probePath(target);
    if (health.state === 'error') await requireEmptyDirectory(target); // a file: the caller's mistake
    if (health.state === 'missing') {
      createdDirs = await makeDirsUnder(target, input.root);
    } else if (health.state === 'corrupted') {
      // A dead FUSE daemon (ENOTCONN...): detach the mount, end what is left of the daemon, mount fresh.
      this.cfg.log.warn(
        { target, errno: health.code },
        'corrupted mount at target; unmounting and mounting again',
      );
      await unmountAll(target);
      const old = this.state.get(target)?.daemon ?? (await this.cfg.mounter.find(target));
      if (old) await this.stopDaemon(old, 2000);
      recovered = true;
    } else if (health.state === 'error') {
      throw new Error(`cannot check target ${target}: ${health.message}`);
    }

    const existing = await this.ourMountAt(target);
    const record = this.state.get(target);
    if (!existing && !createdDirs.length && !recovered) await requireEmptyDirectory(target);
    if (existing) {
      if (record && (record.bucket !== input.bucket || record.readonly !== input.readonly)) {
        throw new MountConflictError(
          `target ${target} is already published with bucket '${record.bucket}'${record.readonly ? ' read-only' : ''}; unpublish it first`,
        );
      }
      // Healthy mount of ours: refresh the credentials in place (the daemon keeps running) and reuse.
      const creds = await this.cfg.adapter.writeCredentials(credentialDir, id, input.credentials);
      const daemon = record?.daemon ??
        (await this.cfg.mounter.find(target)) ?? { kind: this.cfg.mounter.kind };
      await this.state.put({
        ...(record ?? this.newRecord(input, id, daemon, join(logDir, `${id}.log`))),
        credentialFiles: creds.files,
      });
      return { reused: true, recovered, totalMs: performance.now() - t0, daemonMs: 0 };
    }

    const logFile = join(logDir, `${id}.log`);
    const creds = await this.cfg.adapter.writeCredentials(credentialDir, id, input.credentials);
    const argv = this.cfg.adapter.args({
      bucket: input.bucket,
      target,
      options: input.options,
      readonly: input.readonly,
      endpoint: this.cfg.endpoint,
      region: this.cfg.region,
      logFile,
      credentials: creds,
    });
    const tStart = performance.now();
    let daemon: MountRecord['daemon'] | undefined;
    try {
      daemon = await this.cfg.mounter.start({
        id,
        target,
        argv,
        env: creds.env,
        logFile,
        description: `storctl S3 FUSE daemon (${this.cfg.adapter.name}) for volume ${input.volumeId} at ${target}`,
      });
      await this.waitForMount(target, daemon, logFile);
    } catch (err) {
      const output = await tail(logFile);
      if (daemon) {
        await unmountAll(target).catch(() => {});
        await this.cfg.mounter.stop(daemon, 1000).catch(() => {});
      }
      await removeCredentialFiles(credentialDir, id);
      if (this.state.get(target)) await this.state.delete(target);
      for (const dir of [...createdDirs].reverse()) await rmdir(dir).catch(() => {});
      if (err instanceof MountFailedError) throw new MountFailedError(err.reason, output, input.bucket);
      throw new MountFailedError(
        `could not mount bucket '${input.bucket}' at ${target}: ${(err as Error).message}`,
        output,
        input.bucket,
      );
    }
    const daemonMs = performance.now() - tStart;
    await this.state.put({ ...this.newRecord(input, id, daemon, logFile), credentialFiles: creds.files });
    return { reused: false, recovered, totalMs: performance.now() - t0, daemonMs };
  }

  private newRecord(
    input: PublishInput,
    id: string,
    daemon: MountRecord['daemon'],
    logFile: string,
  ): MountRecord {
    return {
      target: input.target,
      id,
      volumeId: input.volumeId,
      bucket: input.bucket,
      fuseBinary: this.cfg.adapter.name,
      readonly: input.readonly,
      daemon,
      logFile,
      credentialFiles: [],
      publishedAt: new Date().toISOString(),
    };
  }

  /**
   * Mounted = our FUSE entry is in the mount table AND the mount answers statfs/readdir (s3fs
   * mounts first and checks the bucket later, then unmounts and exits 0 on bad credentials), while
   * the daemon still runs, and its log does not report a failed start-up check (s3fs answers
   * requests for a moment after its bucket check failed).
   */
  private async waitForMount(target: string, daemon: MountRecord['daemon'], logFile: string): Promise<void> {
    const deadline = Date.now() + this.cfg.mountTimeoutMs;
    for (let i = 0; ; i++) {
      if (
        (await this.ourMountAt(target)) &&
        (await probePath(target, Math.max(50, deadline - Date.now()))).state === 'ok' &&
        (await this.cfg.mounter.isRunning(daemon))
      ) {
        const log = await tail(logFile);
        if (this.cfg.adapter.startupFailed(log))
          throw new MountFailedError(`FUSE daemon for ${target} failed its start-up check`, log);
        return;
      }
      if (i > 0 && !(await this.cfg.mounter.isRunning(daemon))) {
        throw new MountFailedError(`FUSE daemon for ${target} exited without mounting`, await tail(logFile));
      }
      if (Date.now() > deadline) {
        throw new MountFailedError(
          `timed out after ${this.cfg.mountTimeoutMs} ms waiting for the mount at ${target}`,
          await tail(logFile),
        );
      }
      await sleep(i < 50 ? 5 : 25);
    }
  }

  unpublish(target: string): Promise<{ unmounted: boolean }> {
    return this.byTarget.run(target, () => this.unpublishLocked(target));
  }

  private async unpublishLocked(target: string): Promise<{ unmounted: boolean }> {
    const id = targetId(target);
    const record = this.state.get(target);
    const table = await readMountTable();
    const ours = mountsAt(table, target).filter((m) => isS3FuseMount(m));
    let unmounted = false;
    if (ours.length) {
      await unmountAll(target);
      unmounted = true;
    }
    const daemon =
      record?.daemon?.unit || record?.daemon?.pid ? record.daemon : await this.cfg.mounter.find(target);
    if (daemon) await this.stopDaemon(daemon, this.cfg.daemonExitTimeoutMs ?? 10_000);
    await removeCredentialFiles(stateLayout(this.cfg.stateDir).credentialDir, id);
    if (record) await this.state.delete(target);
    // Only a target this mounter published is removed: a directory it never mounted is not its own.
    if (record || unmounted || daemon) {
      try {
        await rmdir(target);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') this.cfg.log.warn({ target, code }, 'target directory left in place');
      }
    }
    return { unmounted };
  }

  /** A daemon recorded by the other kind of mounter (the --mounter setting changed) is still stopped. */
  private stopDaemon(ref: MountRecord['daemon'], timeoutMs: number): Promise<void> {
    if (ref.kind === 'process' && this.cfg.mounter.kind !== 'process')
      return new ProcessMounter(this.cfg.log).stop(ref, timeoutMs);
    return this.cfg.mounter.stop(ref, timeoutMs);
  }

  async close(): Promise<void> {
    await this.byTarget.idle();
  }
}

/** An existing target must be an empty directory: a file, or a directory with content, is the caller's mistake. */
async function requireEmptyDirectory(target: string): Promise<void> {
  const st = await stat(target);
  if (!st.isDirectory())
    throw new GrpcError(status.INVALID_ARGUMENT, `target ${target} exists and is not a directory`);
  if ((await readdir(target)).length > 0)
    throw new GrpcError(
      status.FAILED_PRECONDITION,
      `target ${target} is not empty; publish needs an empty directory`,
    );
}
