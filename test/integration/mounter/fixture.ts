import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type MounterDaemon, type MounterDaemonConfig, start } from '../../../src/daemons/mounter/index.js';
import { isS3FuseMount } from '../../../src/lib/mount/fuse-binary.js';
import { readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { listFuseProcesses } from '../../../src/lib/mount/processes.js';
import { CsiClient } from '../../helpers/csi-client.js';
import { S3RVER_KEYS, S3Server } from '../../helpers/s3.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';

export const BUCKET = 'bucket1';

/** Mounts whose mount point lies below `root`. */
export async function mountsBelow(root: string) {
  return (await readMountTable()).filter((m) => m.mountPoint.startsWith(`${root}/`));
}

/** S3 FUSE mounts below `root` (what a test asserts is gone). */
export async function fuseMountsBelow(root: string) {
  return (await mountsBelow(root)).filter((m) => isS3FuseMount(m));
}

/** FUSE processes serving a target below `root` (started by the tests). */
export async function fuseProcessesBelow(root: string) {
  return (await listFuseProcesses()).filter((p) => p.argv[2]?.startsWith(`${root}/`));
}

/** Undo everything a test may have left: mounts below root (lazy), FUSE processes by PID, files. */
export async function cleanupRoot(root: string): Promise<void> {
  for (const m of (await mountsBelow(root)).reverse()) {
    try {
      execFileSync('umount', ['-l', m.mountPoint], { stdio: 'ignore' });
    } catch {}
  }
  for (const p of await fuseProcessesBelow(root)) {
    if (p.unit) continue; // units belong to the systemd sandbox, stopped with it
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {}
  }
  await waitFor(async () => (await fuseProcessesBelow(root)).filter((p) => !p.unit).length === 0, {
    what: 'test FUSE processes to end',
  }).catch(() => {});
  await rm(root, { recursive: true, force: true });
}

export interface Env {
  root: string;
  s3: S3Server;
  stateDir: string;
  targets: string;
  socket: string;
}

export async function makeEnv(prefix: string, base = tmpdir()): Promise<Env> {
  const root = await mkdtemp(join(base, `${prefix}-`));
  const s3 = await S3Server.start(root, [BUCKET]);
  return {
    root,
    s3,
    stateDir: join(root, 'state'),
    targets: join(root, 'pods'),
    socket: join(root, 'sock', 'csi.sock'),
  };
}

export async function startMounter(
  env: Env,
  over: Partial<MounterDaemonConfig> = {},
): Promise<{ daemon: MounterDaemon; csi: CsiClient }> {
  const daemon = await start({
    endpoint: `unix://${env.socket}`,
    nodeId: 'node-1',
    mounter: 'process',
    fuseBinary: 's3fs',
    s3Endpoint: env.s3.endpoint,
    stateDir: env.stateDir,
    // The test's own temp root stands for kubelet's directory: targets outside it are refused.
    roots: [env.root],
    mountTimeoutMs: 15_000,
    env: {
      PATH: process.env.PATH,
      AWS_ACCESS_KEY_ID: S3RVER_KEYS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3RVER_KEYS.secretAccessKey,
    },
    logLevel: 'silent',
    ...over,
  });
  return { daemon, csi: new CsiClient(daemon.socketPath) };
}

/**
 * `storctl daemon mounter` (the built CLI) on `env`: node n1, s3fs against the env's S3 server, the
 * env's root as its only root; `extra` flags after these (--mounter, --mount-timeout, …). Its
 * driver credentials default to the S3 server's keys.
 */
export function mounterProcess(
  env: Env,
  extra: string[] = [],
  o: { stateDir?: string; credentials?: { accessKeyId: string; secretAccessKey: string } } = {},
): StorctlProcess {
  const keys = o.credentials ?? S3RVER_KEYS;
  return new StorctlProcess(
    [
      'daemon',
      'mounter',
      '--endpoint',
      `unix://${env.socket}`,
      '--node-id',
      'n1',
      '--fuse-binary',
      's3fs',
      '--s3-endpoint',
      env.s3.endpoint,
      '--state-dir',
      o.stateDir ?? env.stateDir,
      '--root',
      env.root,
      ...extra,
    ],
    { AWS_ACCESS_KEY_ID: keys.accessKeyId, AWS_SECRET_ACCESS_KEY: keys.secretAccessKey },
  );
}

/** A process-mounter daemon shared by one test file; `restart` replaces `daemon` and `csi`. */
export interface ProcessMounterFixture {
  env: Env;
  daemon: MounterDaemon;
  csi: CsiClient;
  restart(): Promise<void>;
}

/**
 * Registers beforeAll/afterAll for a test file: a fresh env (temp root + s3rver) and a process mounter
 * on it, all stopped and cleaned up afterwards (a daemon that fails to stop does not skip the cleanup).
 */
export function processMounterFixture(prefix: string): ProcessMounterFixture {
  const fx = {
    restart: async () => {
      fx.csi.close();
      await fx.daemon.stop();
      Object.assign(fx, await startMounter(fx.env, { mounter: 'process' }));
    },
  } as ProcessMounterFixture;
  beforeAll(async () => {
    fx.env = await makeEnv(prefix);
    Object.assign(fx, await startMounter(fx.env, { mounter: 'process' }));
  });
  afterAll(async () => {
    fx.csi?.close();
    await fx.daemon?.stop().catch(() => {});
    await fx.env?.s3.stop();
    if (fx.env) await cleanupRoot(fx.env.root);
  });
  return fx;
}

export const targetPath = (env: Env, pod: string, vol: string) =>
  join(env.targets, pod, 'volumes', 'kubernetes.io~csi', vol, 'mount');

const REPO = join(import.meta.dirname, '../../..');

/**
 * The CLI tests run the built CLI (bin/run.js → dist/), which `npm test` builds first and vitest's
 * global setup (test/global-setup.ts) rebuilds when it is missing or older than the sources. This
 * checks that the build it left has the mounter commands.
 */
export function ensureBuilt(): void {
  const built = ['dist/commands/doctor/mounts.js', 'dist/commands/daemon/mounter.js'];
  const manifest = join(REPO, 'oclif.manifest.json');
  const commands = existsSync(manifest)
    ? Object.keys(JSON.parse(readFileSync(manifest, 'utf8')).commands ?? {})
    : ['doctor:mounts', 'daemon:mounter'];
  if (
    built.some((f) => !existsSync(join(REPO, f))) ||
    !commands.includes('doctor:mounts') ||
    !commands.includes('daemon:mounter')
  ) {
    throw new Error('the CLI is not built (or oclif.manifest.json is stale): run `npm run build` first');
  }
}
