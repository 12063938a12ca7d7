import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { open, readdir, readFile } from 'node:fs/promises';
import { arch, platform, release } from 'node:os';
import { basename, join } from 'node:path';
import { dumpStore } from '../catalog/dump.js';
import { withStore } from '../catalog/with-store.js';
import { stateLayout } from '../mount/s3-volumes.js';
import { readCsiNodeState, stateFileOf } from '../orphans/csi-node-state.js';
import type { KeySpace } from '../store/keys.js';
import type { Redactor } from './redact.js';
import type { TarEntry } from './tar.js';

export interface BundleOptions {
  /** `storctl` entry point to run the `get` and `doctor` commands with (bin/run.js). */
  bin: string;
  /** Global flags those commands get: the same store and key space as this one. */
  globalArgs: string[];
  storeUrl: string;
  tls: { ca?: string; cert?: string; key?: string };
  space: KeySpace;
  dataDir: string;
  mounterStateDir: string;
  /** csi-node's state directory: its state file and each staged volume's path-proxy log go in. */
  csiNodeStateDir: string;
  /** Lines kept from the end of each log. */
  logLines: number;
  version: string;
  redactor: Redactor;
  /** Deadline of each command the bundle runs. */
  commandTimeoutMs: number;
}

/** The `get` listings a bundle holds, as `-o json`. */
const LISTINGS = ['nodes', 'pools', 'volumes', 'replicas', 'nexuses', 'snapshots', 'switchovers'];

/** One part of the bundle, or why it is missing (the bundle is made whatever fails). */
interface Part {
  name: string;
  ok: boolean;
  note?: string;
}

/**
 * Everything a support bundle holds, redacted: the store dump, each role's recent logs, `get`
 * listings, the doctors' reports, the orphans report, versions and endpoints. A part that cannot be collected is noted
 * in manifest.json instead; the bundle never fails for one of them.
 */
export async function collectBundle(root: string, o: BundleOptions): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  const parts: Part[] = [];
  const add = (name: string, text: string) => {
    entries.push({ name: `${root}/${name}`, content: o.redactor.redact(text), mode: 0o600 });
    parts.push({ name, ok: true });
  };
  const miss = (name: string, note: string) => parts.push({ name, ok: false, note: o.redactor.redact(note) });

  let storeText = '';
  try {
    const count = await withStore({ storeUrl: o.storeUrl, tls: o.tls }, (store) =>
      dumpStore(store, o.space, (line) => {
        storeText += `${line}\n`;
      }),
    );
    add('store/dump.jsonl', storeText);
    parts[parts.length - 1].note = `${count} keys`;
  } catch (err) {
    miss('store/dump.jsonl', (err as Error).message);
  }

  const run = (args: string[]) => runSelf(o.bin, [...args, ...o.globalArgs], o.commandTimeoutMs);
  for (const what of LISTINGS) {
    const r = await run(['get', what, '-o', 'json']);
    if (r.code === 0) add(`get/${what}.json`, r.stdout);
    else miss(`get/${what}.json`, `exit ${r.code}: ${r.stderr.trim()}`);
  }
  const events = await run(['events', '-o', 'json', '--limit', '1000']);
  if (events.code === 0) add('get/events.json', events.stdout);
  else miss('get/events.json', `exit ${events.code}: ${events.stderr.trim()}`);
  // Findings exit 10/11; only a failed check (store unreachable, …) is a missing part.
  const doctor = await run(['doctor', 'store', '-o', 'json']);
  if ([0, 10, 11].includes(doctor.code)) add('doctor/store.json', doctor.stdout);
  else miss('doctor/store.json', `exit ${doctor.code}: ${doctor.stderr.trim()}`);
  // What nothing owns any more, report-only (exit 0 whatever it finds).
  const csiNodeState = existsSync(o.csiNodeStateDir) ? ['--csi-node-state', o.csiNodeStateDir] : [];
  const orphans = await run(['orphans', '-o', 'json', ...csiNodeState]);
  if (orphans.code === 0) add('orphans.json', orphans.stdout);
  else miss('orphans.json', `exit ${orphans.code}: ${orphans.stderr.trim()}`);
  const mounts = await runSelf(
    o.bin,
    ['doctor', 'mounts', '-o', 'json', '--state-dir', o.mounterStateDir],
    o.commandTimeoutMs,
  );
  if ([0, 1].includes(mounts.code) && mounts.stdout.trim()) add('doctor/mounts.json', mounts.stdout);
  else miss('doctor/mounts.json', `exit ${mounts.code}: ${mounts.stderr.trim()}`);
  const version = await run(['version', '-o', 'json']);
  add(
    'versions.json',
    `${JSON.stringify(
      {
        storctl: o.version,
        node: process.version,
        platform: `${platform()} ${release()} ${arch()}`,
        store: o.storeUrl,
        components:
          version.code === 0 ? JSON.parse(version.stdout) : `exit ${version.code}: ${version.stderr}`,
      },
      null,
      2,
    )}\n`,
  );

  const endpoints = join(o.dataDir, 'endpoints.json');
  if (existsSync(endpoints)) add('endpoints.json', await readFile(endpoints, 'utf8'));
  else miss('endpoints.json', `no ${endpoints}: no \`storctl up\` runs with this data dir`);

  for (const [dir, prefix] of [
    [join(o.dataDir, 'logs'), 'logs'],
    [stateLayout(o.mounterStateDir).logDir, 'logs/mounter-fuse'],
  ] as const) {
    for (const name of await listFiles(dir))
      add(`${prefix}/${name}`, await tailLines(join(dir, name), o.logLines));
  }
  // Mount records (never the credential files next to them).
  const mountsFile = stateLayout(o.mounterStateDir).stateFile;
  if (existsSync(mountsFile)) add(`mounter/${basename(mountsFile)}`, await readFile(mountsFile, 'utf8'));

  // What csi-node staged (and which process keeps it), and why each path proxy did what it did.
  try {
    const csiNode = await readCsiNodeState(o.csiNodeStateDir);
    if (!csiNode)
      miss('csi-node/state.json', `no ${stateFileOf(o.csiNodeStateDir)}: no csi-node keeps that directory`);
    else {
      add('csi-node/state.json', await readFile(csiNode.file, 'utf8'));
      add('csi-node/owner.json', `${JSON.stringify(csiNode.owner ?? null, null, 2)}\n`);
      for (const v of csiNode.volumes) {
        const log = v.dir ? join(v.dir, 'proxy.log') : '';
        if (log && existsSync(log))
          add(`logs/csi-node-proxy/${v.volumeId}.log`, await tailLines(log, o.logLines));
      }
    }
  } catch (err) {
    miss('csi-node/state.json', (err as Error).message);
  }

  entries.push({
    name: `${root}/manifest.json`,
    content: `${JSON.stringify({ created: new Date().toISOString(), dataDir: o.dataDir, parts }, null, 2)}\n`,
    mode: 0o600,
  });
  return entries;
}

async function listFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir, { withFileTypes: true }))
      .filter((d) => d.isFile())
      .map((d) => d.name)
      .sort();
  } catch {
    return [];
  }
}

/** The last `lines` lines of a file, read from its end (a log may be large). */
async function tailLines(file: string, lines: number): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    let start = size;
    let text = '';
    const CHUNK = 64 * 1024;
    while (start > 0) {
      const len = Math.min(CHUNK, start);
      start -= len;
      const buf = Buffer.alloc(len);
      await fh.read(buf, 0, len, start);
      text = buf.toString('utf8') + text;
      if (text.split('\n').length > lines + 1) break;
    }
    const all = text.split('\n');
    const kept = all.slice(Math.max(0, all.length - lines - (all.at(-1) === '' ? 1 : 0)));
    return kept.join('\n');
  } finally {
    await fh.close();
  }
}

/** Run this storctl with `args`; never throws (the exit code and output say what happened). */
function runSelf(
  bin: string,
  args: string[],
  timeoutMs: number,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [bin, ...args],
      { timeout: timeoutMs, maxBuffer: 512 * 1024 * 1024, env: { ...process.env, STORCTL_OUTPUT: 'json' } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}
