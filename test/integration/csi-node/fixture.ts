import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { readMountTable } from '../../../src/lib/mount/mountinfo.js';
import { CsiClient, NodeFsClient } from '../../helpers/csi-client.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';

const exec = promisify(execFile);

/**
 * A real `storctl daemon csi-node` in a temp dir: its socket, state dir and the only root it may
 * mount below all live there, so everything it leaves behind is found by looking under `dir`.
 */
export class CsiNodeFixture {
  readonly dir = mkdtempSync(join(tmpdir(), 'storctl-csinode-'));
  readonly root = join(this.dir, 'kubelet');
  readonly stateDir = join(this.dir, 'state');
  readonly socket = join(this.dir, 'csi.sock');
  proc?: StorctlProcess;
  /** Output of every csi-node process this fixture ran (restarts included). */
  private pastOutput = '';
  csi?: CsiClient;
  fs?: NodeFsClient;
  ready: Record<string, unknown> = {};

  constructor(
    private readonly restUrl?: string,
    private readonly opts: { attacher?: 'fuse-loop' | 'nbdfuse-loop' } = {},
  ) {}

  async start(): Promise<void> {
    const args = ['daemon', 'csi-node', '--endpoint', `unix://${this.socket}`, '--node-id', 'csi-node-1'];
    args.push('--root', this.root, '--state-dir', this.stateDir, '--path-timeout', '10s');
    if (this.restUrl) args.push('--rest', this.restUrl);
    if (this.opts.attacher) args.push('--attacher', this.opts.attacher);
    this.pastOutput += this.proc?.output ?? '';
    const proc = new StorctlProcess(args, { STORCTL_LOG_LEVEL: 'info' });
    this.proc = proc;
    this.ready = await waitFor(
      () => {
        for (const line of proc.output.split('\n')) {
          if (!line.includes('"csi-node ready"')) continue;
          try {
            return JSON.parse(line) as Record<string, unknown>;
          } catch {}
        }
        if (!proc.running) throw new Error(`csi-node exited: ${proc.output}`);
        return null;
      },
      { what: 'csi-node ready', timeoutMs: 30_000 },
    );
    this.csi?.close();
    this.fs?.close();
    this.csi = new CsiClient(this.socket);
    this.fs = new NodeFsClient(String(this.ready.fsEndpoint));
  }

  /** Kill -9 the daemon (by its PID), as a crash would. */
  async crash(): Promise<void> {
    await this.proc?.kill('SIGKILL');
  }

  /**
   * The FUSE files csi-node attached loop devices to (from its 'attached' log lines). A loop device
   * whose FUSE mount was detached lazily shows its file as `/<name>`; the name is a uuid of ours.
   */
  private attachedFiles(): Set<string> {
    const names = new Set<string>();
    for (const line of (this.pastOutput + (this.proc?.output ?? '')).split('\n')) {
      if (!line.includes('"attached"')) continue;
      try {
        const file = (JSON.parse(line) as { file?: string }).file;
        if (file) names.add(`/${basename(file)}`);
      } catch {}
    }
    return names;
  }

  /** Loop devices bound to a file of ours: `[device, backing file]`. */
  private async ourLoops(): Promise<[string, string][]> {
    const files = this.attachedFiles();
    const { stdout } = await exec('losetup', ['-a', '-n', '-O', 'NAME,BACK-FILE']);
    const out: [string, string][] = [];
    for (const line of stdout.split('\n')) {
      const [dev, back] = line.trim().split(/\s+/, 2);
      if (dev && back && (back.startsWith(`${this.dir}/`) || files.has(back))) out.push([dev, back]);
    }
    return out;
  }

  /** Mounts, loop devices, processes and files of ours still present: each a line; [] when clean. */
  async leftovers(): Promise<string[]> {
    const out: string[] = [];
    for (const m of await readMountTable()) {
      if (m.mountPoint.startsWith(`${this.dir}/`)) out.push(`mount ${m.mountPoint} (${m.fsType})`);
    }
    for (const [dev, back] of await this.ourLoops()) out.push(`loop ${dev} ${back}`);
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid) || Number(pid) === this.proc?.pid) continue;
      const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
      if (cmd.includes(this.stateDir)) out.push(`process ${pid}: ${cmd.replace(/\0/g, ' ').slice(0, 160)}`);
    }
    const vdir = join(this.stateDir, 'v');
    for (const name of await readdir(vdir).catch(() => [] as string[])) out.push(`file ${join(vdir, name)}`);
    const state = JSON.parse(await readFile(join(this.stateDir, 'state.json'), 'utf8').catch(() => '{}'));
    for (const id of Object.keys(state.volumes ?? {})) out.push(`state record ${id}`);
    return out;
  }

  async stop(): Promise<void> {
    this.csi?.close();
    this.fs?.close();
    await this.proc?.kill('SIGTERM');
  }

  /**
   * After a failed test: undo whatever is left under this fixture's dir (its mounts, lazily; the loop
   * devices bound to its files; its processes, by PID), so no test leaves anything on the machine.
   */
  async forceCleanup(): Promise<void> {
    await forceCleanupBelow(
      this.dir,
      this.stateDir,
      (await this.ourLoops()).map(([dev]) => dev),
    );
  }

  /** The end of a test: stop the node, undo whatever it left (mounts, loops, proxies), remove the dir. */
  async dispose(): Promise<void> {
    await this.stop();
    await this.forceCleanup();
    await this.remove();
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * Undo what a csi-node left below `dir`: its filesystems (lazily), then `loops` (the loop devices
 * bound to its files), then the FUSE mounts under them, then the processes whose command line names
 * `processMark` (its proxies), by PID.
 */
export async function forceCleanupBelow(dir: string, processMark: string, loops: string[]): Promise<void> {
  const mounts = (await readMountTable()).filter((m) => m.mountPoint.startsWith(`${dir}/`));
  for (const m of mounts.filter((m) => !m.fsType.startsWith('fuse')).reverse())
    await exec('umount', ['-l', m.mountPoint]).catch(() => {});
  for (const dev of loops) await exec('losetup', ['-d', dev]).catch(() => {});
  for (const m of mounts.filter((m) => m.fsType.startsWith('fuse')))
    await exec('umount', ['-l', m.mountPoint]).catch(() => {});
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(processMark)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {}
    }
  }
}

/** Loop devices whose backing file lies below `dir`. */
export async function loopsBelow(dir: string): Promise<string[]> {
  const { stdout } = await exec('losetup', ['-a', '-n', '-O', 'NAME,BACK-FILE']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/, 2))
    .filter(([dev, back]) => dev && back?.startsWith(`${dir}/`))
    .map(([dev]) => dev);
}
