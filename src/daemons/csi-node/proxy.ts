import { spawn } from 'node:child_process';
import { open, readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exitReason } from '../../lib/exit-reason.js';
import { sleep, waitUntilGone } from '../../lib/mount/poll.js';
import { isSameProcessAlive, procStat, terminateProcess } from '../../lib/mount/processes.js';
import type { PathProbe, ProxyStatus } from './proxy-server.js';

export { PROXY_EXPORT } from './proxy-server.js';

const PROXY_MAIN = fileURLToPath(new URL('./proxy-main.js', import.meta.url));

/** How csi-node finds a volume's proxy process again (kept in the state file). */
export interface ProxyRef {
  pid: number;
  pidStartTime?: string;
  socketPath: string;
  controlPath: string;
  logFile: string;
}

/**
 * csi-node's side of a per-volume path proxy (proxy-server.ts): a detached process per volume,
 * so a restart of csi-node keeps every path; controlled over its 0600 control socket.
 */
export async function startProxy(o: {
  dir: string;
  target: string;
  advertisedSize?: number;
  pathTimeoutMs?: number;
}): Promise<ProxyRef> {
  const socketPath = join(o.dir, 'nbd.sock');
  const controlPath = join(o.dir, 'ctl.sock');
  const logFile = join(o.dir, 'proxy.log');
  const out = await open(logFile, 'a', 0o600);
  let pid: number;
  try {
    const args = JSON.stringify({
      socketPath,
      controlPath,
      target: o.target,
      advertisedSize: o.advertisedSize,
      pathTimeoutMs: o.pathTimeoutMs,
    });
    const child = spawn(process.execPath, [PROXY_MAIN, args], {
      detached: true,
      stdio: ['ignore', out.fd, out.fd],
      cwd: '/',
    });
    pid = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('spawn', () => resolve(child.pid!));
    });
    child.unref();
  } finally {
    await out.close();
  }
  const ref: ProxyRef = {
    pid,
    pidStartTime: (await procStat(pid))?.startTime,
    socketPath,
    controlPath,
    logFile,
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    const st = await proxyStatus(ref).catch(() => undefined);
    if (st) return ref;
    if (!(await isSameProcessAlive(pid, ref.pidStartTime)) || Date.now() > deadline) {
      await stopProxy(ref);
      const tail = await readTail(logFile);
      throw new Error(`the path proxy for ${o.target} did not start: ${tail}`);
    }
    await sleep(20);
  }
}

async function readTail(file: string): Promise<string> {
  try {
    return exitReason((await readFile(file, 'utf8')).split('\n')) ?? 'no output';
  } catch {
    return 'no log';
  }
}

/** One request on the control socket. */
export function proxyControl(
  ref: ProxyRef,
  req: { op: string; target?: string; timeoutMs?: number; path?: string },
  timeoutMs = 10_000,
): Promise<{ ok: boolean; error?: string; status?: ProxyStatus; probe?: PathProbe }> {
  return new Promise((resolve, reject) => {
    const s = connect(ref.controlPath);
    let buf = '';
    const t = setTimeout(
      () => s.destroy(new Error(`proxy control timed out after ${timeoutMs} ms`)),
      timeoutMs,
    );
    s.on('connect', () => s.write(`${JSON.stringify(req)}\n`));
    s.on('data', (d) => {
      buf += d;
      const i = buf.indexOf('\n');
      if (i < 0) return;
      clearTimeout(t);
      s.end();
      try {
        resolve(JSON.parse(buf.slice(0, i)));
      } catch (err) {
        reject(err);
      }
    });
    s.on('error', (err) => {
      clearTimeout(t);
      reject(err);
    });
    s.on('close', () => {
      clearTimeout(t);
      reject(new Error('proxy control socket closed'));
    });
  });
}

async function expectOk(
  ref: ProxyRef,
  req: { op: string; target?: string; path?: string },
): Promise<ProxyStatus> {
  const a = await proxyControl(ref, req);
  if (!a.ok || !a.status) throw new Error(`path proxy ${req.op} failed: ${a.error ?? 'no status'}`);
  return a.status;
}

/** The proxy's status, or undefined when its process is gone. */
export async function proxyStatus(ref: ProxyRef): Promise<ProxyStatus | undefined> {
  if (!(await isSameProcessAlive(ref.pid, ref.pidStartTime))) return undefined;
  return expectOk(ref, { op: 'status' }).catch(() => undefined);
}

/** Point the volume's path at another target; the block device and filesystem stay. */
export const repointProxy = (ref: ProxyRef, target: string) => expectOk(ref, { op: 'repoint', target });

/** Read one block through the proxy's current path (see PathProxy.probe). */
export async function probeProxy(ref: ProxyRef, timeoutMs: number): Promise<PathProbe> {
  const a = await proxyControl(ref, { op: 'probe', timeoutMs }, timeoutMs + 2000);
  if (!a.ok || !a.probe) throw new Error(`path proxy probe failed: ${a.error ?? 'no answer'}`);
  return a.probe;
}

/** Have the proxy serve the volume as a FUSE file mounted at `path` (in the volume's directory). */
export const serveFileFromProxy = (ref: ProxyRef, path: string) => expectOk(ref, { op: 'serve-file', path });

/** Reconnect to learn the target's current size (after a resize). */
export const refreshProxy = (ref: ProxyRef) => expectOk(ref, { op: 'refresh' });

/** Stop the proxy process (control socket first, then signals to its PID). */
export async function stopProxy(ref: ProxyRef): Promise<void> {
  const alive = () => isSameProcessAlive(ref.pid, ref.pidStartTime);
  if (!(await alive())) return;
  await proxyControl(ref, { op: 'stop' }, 3000).catch(() => {});
  if (await waitUntilGone(alive, 5000)) return;
  await terminateProcess(ref.pid, ref.pidStartTime);
}
