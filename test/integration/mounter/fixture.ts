import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MounterDaemon, type MounterDaemonConfig, start } from '../../../src/daemons/mounter/index.js';
import { isS3FuseMount } from '../../../src/lib/mount/fuse-binary.js';
import { readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { listFuseProcesses } from '../../../src/lib/mount/processes.js';
import { CsiClient } from '../../helpers/csi-client.js';
import { S3RVER_KEYS, S3Server } from '../../helpers/s3.js';
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

export const targetPath = (env: Env, pod: string, vol: string) =>
  join(env.targets, pod, 'volumes', 'kubernetes.io~csi', vol, 'mount');

const REPO = join(import.meta.dirname, '../../..');

/** Newest mtime of the .ts files below `dir`. */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(p));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

/**
 * The CLI tests run the built CLI (bin/run.js → dist/). CI builds before testing; locally, rebuild
 * only when our sources are newer than dist, so parallel test files do not rewrite dist/ under
 * each other. A generated oclif.manifest.json that predates our commands is refreshed.
 */
export function ensureBuilt(): void {
  const built = ['dist/commands/doctor/mounts.js', 'dist/commands/daemon/mounter.js'].map((f) =>
    join(REPO, f),
  );
  const sources = Math.max(
    ...['src/lib/mount', 'src/lib/systemd', 'src/daemons/mounter', 'src/commands'].map((d) =>
      newestSource(join(REPO, d)),
    ),
  );
  if (built.some((f) => !existsSync(f) || statSync(f).mtimeMs < sources)) {
    // tsc emits dist/ even when files outside this suite have type errors; its exit code is not ours.
    spawnSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: REPO, stdio: 'ignore' });
  }
  const manifest = join(REPO, 'oclif.manifest.json');
  if (existsSync(manifest)) {
    const commands = Object.keys(JSON.parse(readFileSync(manifest, 'utf8')).commands ?? {});
    if (!commands.includes('doctor:mounts') || !commands.includes('daemon:mounter')) {
      spawnSync('npx', ['oclif', 'manifest'], { cwd: REPO, stdio: 'ignore' });
    }
  }
}
