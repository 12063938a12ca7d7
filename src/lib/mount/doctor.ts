import { readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import type { SystemdClient } from '../systemd/client.js';
import { isS3FuseMount } from './fuse-binary.js';
import { probePath } from './health.js';
import type { DaemonInfo } from './mounter.js';
import { type MountEntry, readMountTable } from './mountinfo.js';
import { ProcessMounter } from './process-mounter.js';
import { isSameProcessAlive } from './processes.js';
import { stateLayout } from './s3-volumes.js';
import type { MountRecord } from './state.js';
import { readMounterRoots } from './state-dir.js';
import { SystemdMounter } from './systemd-mounter.js';
import { targetId } from './unit-name.js';
import { detachTop, unmountAll } from './unmount.js';

export type FindingKind =
  | 'stale-mount'
  | 'orphaned-unit'
  | 'orphaned-process'
  | 'collision'
  | 'failed-unit'
  | 'leftover-credentials'
  | 'stale-record';

/** One problem on the node: what it is, what it means, and what `--fix` does about it. */
export interface Finding {
  kind: FindingKind;
  target?: string;
  subject: string;
  meaning: string;
  fix: string;
}

export interface DoctorReport {
  healthy: boolean;
  findings: Finding[];
  scanned: {
    mounts: number;
    units: number | null;
    processes: number;
    records: number;
    credentialFiles: number;
  };
  notes: string[];
  /** What was checked: this state dir's mounter (its records and roots), or the whole machine. */
  scope: {
    stateDir: string;
    machineWide: boolean;
    /** The roots the state dir's mounter confines targets to (roots.json); null when unknown. */
    roots: string[] | null;
    /** S3 FUSE mounts and daemons on this machine (below --under) that are another mounter's. */
    outside: { mounts: number; daemons: number };
    summary: string;
  };
}

/**
 * Which mounts a check covers. By default the mounter of the state directory's: its recorded targets
 * and targets under its roots (a second cluster on the machine has its own state dir and roots).
 * `under` narrows that to targets below a directory; `machineWide` checks every S3 FUSE mount.
 */
export interface DoctorScope {
  under?: string;
  machineWide?: boolean;
}

interface Scan {
  report: DoctorReport;
  records: Map<string, MountRecord>;
  daemons: DaemonInfo[];
  mounts: MountEntry[];
}

const RUNNING = new Set(['active', 'activating', 'reloading', 'running']);

async function readRecords(stateDir: string): Promise<Map<string, MountRecord>> {
  try {
    const parsed = JSON.parse(await readFile(stateLayout(stateDir).stateFile, 'utf8')) as {
      mounts?: Record<string, MountRecord>;
    };
    return new Map(Object.entries(parsed.mounts ?? {}));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw new Error(`cannot read the mounter state file in ${stateDir}: ${(err as Error).message}`);
  }
}

/**
 * Scan the node: the mount table, mount-s3-* units (when a systemd manager answers), FUSE processes,
 * the mounter's records and credential files. Read-only.
 */
async function scan(
  stateDir: string,
  systemd: SystemdClient | undefined,
  scope: DoctorScope | string = {},
): Promise<Scan> {
  const { under, machineWide = false } = typeof scope === 'string' ? { under: scope } : scope;
  const notes: string[] = [];
  const findings: Finding[] = [];
  const below = (dir: string, t: string | undefined) => !!t?.startsWith(`${dir.replace(/\/+$/, '')}/`);
  // --under DIR: only what serves a target below DIR (the kubelet dir of this node, a test's root).
  const inScope = (t: string | undefined) => !under || below(under, t);
  const allRecords = await readRecords(stateDir);
  const roots = await readMounterRoots(stateDir);
  // This mounter's: a recorded target, or one under its roots. Another mounter's are left out.
  const ours = (t: string | undefined) =>
    machineWide || (!!t && (allRecords.has(t) || !!roots?.some((r) => t === r || below(r, t))));
  const records = new Map([...allRecords].filter(([t]) => inScope(t)));
  const seenMounts = (await readMountTable()).filter((m) => isS3FuseMount(m) && inScope(m.mountPoint));
  const seenUnits = (systemd ? await new SystemdMounter(systemd, '').list() : []).filter((u) =>
    inScope(u.target),
  );
  if (!systemd) notes.push('no systemd manager reachable: units were not scanned');
  const seenProcesses = (await new ProcessMounter().list()).filter((p) => inScope(p.target));
  const mounts = seenMounts.filter((m) => ours(m.mountPoint));
  const units = seenUnits.filter((u) => ours(u.target));
  const processes = seenProcesses.filter((p) => ours(p.target));
  const outside = {
    mounts: seenMounts.length - mounts.length,
    daemons: seenUnits.length - units.length + seenProcesses.length - processes.length,
  };
  const summary = machineWide
    ? 'every S3 FUSE mount and daemon on this machine, whichever mounter started it (--machine-wide)'
    : `the mounter of state directory ${resolve(stateDir)}: its recorded targets${
        roots
          ? ` and targets under ${roots.join(', ')}`
          : ' (no roots.json there: no mounter has started with it)'
      }`;
  if (outside.mounts || outside.daemons)
    notes.push(
      `left out ${outside.mounts} S3 mount(s) and ${outside.daemons} FUSE daemon(s) of another mounter (another cluster on this machine?); --machine-wide checks them too`,
    );
  const daemons = [...units, ...processes];
  const mounted = new Set(mounts.map((m) => m.mountPoint));

  for (const target of mounted) {
    const health = await probePath(target);
    if (health.state === 'corrupted') {
      findings.push({
        kind: 'stale-mount',
        target,
        subject: target,
        meaning: `mounted, but its FUSE daemon is gone (${health.code}): every access fails`,
        fix: 'lazy unmount (umount -l), stop what is left of its daemon, drop its record and credential files; the next NodePublish mounts it fresh',
      });
    }
  }

  const byTarget = new Map<string, DaemonInfo[]>();
  for (const d of daemons) {
    if (d.target && RUNNING.has(d.state)) byTarget.set(d.target, [...(byTarget.get(d.target) ?? []), d]);
  }
  for (const [target, list] of byTarget) {
    if (list.length > 1) {
      findings.push({
        kind: 'collision',
        target,
        subject: list.map((d) => d.name).join(', '),
        meaning: `${list.length} FUSE daemons serve one target (stacked mounts; only the top one is used, the others leak)`,
        fix: 'keep the daemon the mounter recorded, stop the others',
      });
    }
  }

  for (const u of units) {
    if (u.state === 'failed') {
      findings.push({
        kind: 'failed-unit',
        target: u.target,
        subject: u.name,
        meaning: 'the unit failed and stays loaded',
        fix: 'reset-failed the unit',
      });
    } else if (RUNNING.has(u.state) && (!u.target || !mounted.has(u.target))) {
      findings.push({
        kind: 'orphaned-unit',
        target: u.target,
        subject: u.name,
        meaning: u.target
          ? `the unit runs but nothing is mounted at ${u.target}`
          : 'the unit runs but serves no known target',
        fix: 'stop the unit and reset-failed it',
      });
    }
  }
  for (const p of processes) {
    if (p.target && !mounted.has(p.target)) {
      findings.push({
        kind: 'orphaned-process',
        target: p.target,
        subject: p.name,
        meaning: `the FUSE process runs but nothing is mounted at ${p.target}`,
        fix: 'terminate the process',
      });
    }
  }

  const { credentialDir } = stateLayout(stateDir);
  const ids = new Set([...records.values()].map((r) => r.id));
  let credentialFiles = 0;
  for (const name of await readdir(credentialDir).catch(() => [] as string[])) {
    credentialFiles++;
    const id = name.split('.')[0];
    if (!ids.has(id) || name.includes('.tmp-')) {
      findings.push({
        kind: 'leftover-credentials',
        subject: join(credentialDir, name),
        meaning: 'a credential file no published volume uses (keys left on disk)',
        fix: 'remove the file',
      });
    }
  }

  for (const r of records.values()) {
    const running = daemons.some((d) => d.target === r.target && RUNNING.has(d.state));
    if (!mounted.has(r.target) && !running) {
      const empty = await readdir(r.target).then(
        (e) => e.length === 0,
        () => false,
      );
      findings.push({
        kind: 'stale-record',
        target: r.target,
        subject: r.target,
        meaning: `recorded as published (volume ${r.volumeId}) but not mounted and no daemon runs${empty ? '; its target directory is left empty' : ''}`,
        fix: 'drop the record and its credential files, remove the empty target directory',
      });
    }
  }

  return {
    report: {
      healthy: findings.length === 0,
      findings,
      scanned: {
        mounts: mounts.length,
        units: systemd ? units.length : null,
        processes: processes.length,
        records: records.size,
        credentialFiles,
      },
      notes,
      scope: { stateDir: resolve(stateDir), machineWide, roots, outside, summary },
    },
    records,
    daemons,
    mounts,
  };
}

export async function diagnoseMounts(
  stateDir: string,
  systemd?: SystemdClient,
  scope?: DoctorScope | string,
): Promise<DoctorReport> {
  return (await scan(stateDir, systemd, scope)).report;
}

async function stopDaemon(d: DaemonInfo, systemd: SystemdClient | undefined): Promise<void> {
  if (d.ref.unit && systemd) await new SystemdMounter(systemd, '', 15_000).stopUnit(d.ref.unit);
  else if (d.ref.pid && (await isSameProcessAlive(d.ref.pid, d.ref.pidStartTime)))
    await new ProcessMounter().stop(d.ref, 0);
}

async function dropRecord(stateDir: string, target: string): Promise<void> {
  const { stateFile, credentialDir } = stateLayout(stateDir);
  const records = await readRecords(stateDir);
  const id = records.get(target)?.id ?? targetId(target);
  for (const name of await readdir(credentialDir).catch(() => [] as string[])) {
    if (name.startsWith(`${id}.`)) await rm(join(credentialDir, name), { force: true });
  }
  if (records.delete(target)) {
    await writeFileAtomic(
      stateFile,
      `${JSON.stringify({ version: 1, mounts: Object.fromEntries(records) }, null, 2)}\n`,
    );
  }
  await rmdir(target).catch(() => {});
}

/** Repair what a scan found; returns what was done, one line per action. */
export async function fixMounts(
  stateDir: string,
  findings: Finding[],
  systemd?: SystemdClient,
  scope?: DoctorScope | string,
): Promise<string[]> {
  const done: string[] = [];
  const { records, daemons } = await scan(stateDir, systemd, scope);
  for (const f of findings) {
    try {
      switch (f.kind) {
        case 'stale-mount': {
          const r = await unmountAll(f.target!);
          for (const d of daemons.filter((d) => d.target === f.target)) await stopDaemon(d, systemd);
          await dropRecord(stateDir, f.target!);
          done.push(
            `unmounted${r.lazy ? ' (lazy)' : ''} the dead mount at ${f.target} and dropped its record`,
          );
          break;
        }
        case 'collision': {
          const recorded = records.get(f.target!)?.daemon;
          const list = daemons.filter((d) => d.target === f.target && RUNNING.has(d.state));
          const keep =
            list.find(
              (d) =>
                recorded &&
                ((recorded.unit && d.ref.unit === recorded.unit) ||
                  (recorded.pid && d.ref.pid === recorded.pid)),
            ) ?? list[0];
          for (const d of list) if (d !== keep) await stopDaemon(d, systemd);
          // A stopped daemon may leave its (top) mount dead: peel dead layers off until the target answers.
          for (let i = 0; i < 4 && (await probePath(f.target!)).state === 'corrupted'; i++)
            await detachTop(f.target!);
          done.push(
            `kept ${keep.name} for ${f.target}, stopped ${list
              .filter((d) => d !== keep)
              .map((d) => d.name)
              .join(', ')}`,
          );
          break;
        }
        case 'orphaned-unit':
        case 'failed-unit':
          if (systemd) {
            await new SystemdMounter(systemd, '', 15_000).stopUnit(f.subject);
            if (f.target && records.has(f.target)) await dropRecord(stateDir, f.target);
            done.push(`stopped and reset ${f.subject}`);
          }
          break;
        case 'orphaned-process': {
          const d = daemons.find((x) => x.name === f.subject);
          if (d) await stopDaemon(d, systemd);
          if (f.target && records.has(f.target)) await dropRecord(stateDir, f.target);
          done.push(`terminated ${f.subject}`);
          break;
        }
        case 'leftover-credentials':
          await rm(f.subject, { force: true });
          done.push(`removed ${f.subject}`);
          break;
        case 'stale-record':
          await dropRecord(stateDir, f.target!);
          done.push(`dropped the record of ${f.target}`);
          break;
      }
    } catch (err) {
      done.push(`FAILED to fix ${f.kind} ${f.subject}: ${(err as Error).message}`);
    }
  }
  return done;
}
