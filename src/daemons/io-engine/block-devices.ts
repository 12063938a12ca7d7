import { spawn } from 'node:child_process';
import { readdir, readFile, readlink, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlockDevice as RestBlockDevice } from '../../lib/rest/types.js';

/**
 * The node's block devices as Mayastor's REST BlockDevice reports them (docs/mayastor-compat.md §2.2
 * `/nodes/{node}/block_devices`), read from sysfs and mountinfo without shelling out. A filesystem
 * or partition table on an unmounted device is found by reading its first sectors (needs read
 * access to /dev/<name>; without it only mounted filesystems are seen).
 */
export interface BlockDevice extends Omit<RestBlockDevice, 'devtype' | 'partition' | 'filesystem'> {
  devtype: 'disk' | 'partition';
  partition: NonNullable<RestBlockDevice['partition']> | null;
  filesystem: NonNullable<RestBlockDevice['filesystem']> | null;
}

export interface BlockDeviceRoots {
  sys: string;
  dev: string;
  mountinfo: string;
}

const ROOTS: BlockDeviceRoots = { sys: '/sys', dev: '/dev', mountinfo: '/proc/self/mountinfo' };

const readText = (p: string) =>
  readFile(p, 'utf8').then(
    (s) => s.trim(),
    () => '',
  );
const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

/** `major:minor` → first mountpoint and fstype (mountinfo fields 3, 5 and the one after ` - `). */
async function mounts(path: string): Promise<Map<string, { mountpoint: string; fstype: string }>> {
  const out = new Map<string, { mountpoint: string; fstype: string }>();
  for (const line of (await readText(path)).split('\n')) {
    const [left, right] = line.split(' - ');
    if (!right) continue;
    const f = left.split(' ');
    const devno = f[2];
    if (!out.has(devno))
      out.set(devno, { mountpoint: unescapeMount(f[4] ?? ''), fstype: right.split(' ')[0] });
  }
  return out;
}

const unescapeMount = (s: string) =>
  s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(Number.parseInt(o, 8)));

interface Probe {
  fstype: string;
  label: string;
  uuid: string;
  table: 'gpt' | 'dos' | null;
}

const hex = (b: Buffer) => b.toString('hex');
const uuidOf = (b: Buffer) => {
  const h = hex(b);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};
const cstr = (b: Buffer) => b.toString('utf8').replace(/\0.*$/s, '').trim();

/** Filesystem / partition-table signatures in the first 68 KiB (ext*, xfs, btrfs, swap, LVM, vfat, GPT, MBR). */
function probe(buf: Buffer): Probe | null {
  const at = (off: number, s: string) =>
    buf.length >= off + s.length && buf.toString('latin1', off, off + s.length) === s;
  if (buf.length >= 1082 && buf.readUInt16LE(1080) === 0xef53) {
    const compat = buf.readUInt32LE(1116);
    const incompat = buf.readUInt32LE(1120);
    const fstype = incompat & 0x2c0 ? 'ext4' : compat & 0x4 ? 'ext3' : 'ext2';
    return {
      fstype,
      uuid: uuidOf(buf.subarray(1128, 1144)),
      label: cstr(buf.subarray(1144, 1160)),
      table: null,
    };
  }
  if (at(0, 'XFSB'))
    return {
      fstype: 'xfs',
      uuid: uuidOf(buf.subarray(32, 48)),
      label: cstr(buf.subarray(108, 120)),
      table: null,
    };
  if (at(0x10040, '_BHRfS_M'))
    return {
      fstype: 'btrfs',
      uuid: uuidOf(buf.subarray(0x10020, 0x10030)),
      label: cstr(buf.subarray(0x1012b, 0x1022b)),
      table: null,
    };
  if (at(4086, 'SWAPSPACE2') || at(4086, 'SWAP-SPACE'))
    return {
      fstype: 'swap',
      uuid: uuidOf(buf.subarray(1036, 1052)),
      label: cstr(buf.subarray(1052, 1068)),
      table: null,
    };
  if (at(536, 'LVM2 001')) return { fstype: 'LVM2_member', uuid: '', label: '', table: null };
  if (at(512, 'EFI PART')) return { fstype: '', uuid: '', label: '', table: 'gpt' };
  if (buf.length >= 512 && buf.readUInt16LE(510) === 0xaa55) {
    if (at(82, 'FAT32   ') || at(54, 'FAT16   ') || at(54, 'FAT12   '))
      return { fstype: 'vfat', uuid: '', label: '', table: null };
    // An MBR with at least one non-empty partition entry.
    for (let i = 0; i < 4; i++)
      if (buf[446 + i * 16 + 4] !== 0) return { fstype: '', uuid: '', label: '', table: 'dos' };
  }
  return null;
}

/** How long one device may take to show its first bytes before it is listed with unknown content. */
const READ_HEAD_TIMEOUT_MS = 2_000;

/**
 * The device's first 64 KiB, or null when unreadable. A device whose backend hangs (a loop device
 * over a FUSE file whose daemon died, an NBD device whose server is gone) must not hang the listing,
 * nor the io-engine: the read runs in a child process (`head`), never on one of libuv's four threads
 * that every file operation of this process shares — a few hung devices held them all, and the
 * io-engine stalled. After a timeout its content counts as unknown; the child is killed (it goes
 * once the kernel lets go of the read), and that device is not read again until it has gone.
 */
function readHead(path: string): Promise<Buffer | null> {
  if (hungReads.has(path)) return Promise.resolve(null);
  let child: ReturnType<typeof spawn> | undefined;
  const read = new Promise<Buffer | null>((resolve) => {
    const chunks: Buffer[] = [];
    child = spawn('head', ['-c', String(HEAD_BYTES), '--', path], { stdio: ['ignore', 'pipe', 'ignore'] });
    child.stdout!.on('data', (c: Buffer) => chunks.push(c));
    child.once('error', () => resolve(null)); // no `head`: nothing known about the content
    child.once('close', (code) => resolve(code === 0 ? Buffer.concat(chunks) : null));
  });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      hungReads.add(path);
      child?.kill('SIGKILL');
      void read.finally(() => hungReads.delete(path));
      resolve(null);
    }, READ_HEAD_TIMEOUT_MS);
    timer.unref();
  });
  return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
}

const HEAD_BYTES = 0x10240;

/** Devices whose head read timed out and has not returned yet. */
const hungReads = new Set<string>();

/** /dev/disk/by-* symlinks, by the device name they point to. */
async function devlinks(devRoot: string): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const base = join(devRoot, 'disk');
  for (const kind of await readdir(base).catch(() => [] as string[])) {
    for (const link of await readdir(join(base, kind)).catch(() => [] as string[])) {
      const p = join(base, kind, link);
      const target = await readlink(p).catch(() => '');
      const name = target.split('/').pop();
      if (!name) continue;
      out.set(name, [...(out.get(name) ?? []), p]);
    }
  }
  for (const v of out.values()) v.sort();
  return out;
}

/** List the node's block devices; `all` false keeps only available ones. */
export async function listBlockDevices(
  all: boolean,
  roots: BlockDeviceRoots = ROOTS,
): Promise<BlockDevice[]> {
  const mounted = await mounts(roots.mountinfo);
  const links = await devlinks(roots.dev);
  const sysBlock = join(roots.sys, 'block');
  // Every disk at once: a device whose reads hang costs the listing one READ_HEAD_TIMEOUT_MS, not
  // one per such device (a node with a few hung loop devices answered after the caller's deadline).
  const disks = (await readdir(sysBlock).catch(() => [] as string[])).sort();
  const perDisk = await Promise.all(disks.map((disk) => describeDisk(roots, sysBlock, disk, mounted, links)));
  const out = perDisk.flat();
  return all ? out : out.filter((d) => d.available);
}

/** One disk and its partitions, in order. */
async function describeDisk(
  roots: BlockDeviceRoots,
  sysBlock: string,
  disk: string,
  mounted: Awaited<ReturnType<typeof mounts>>,
  links: Map<string, string[]>,
): Promise<BlockDevice[]> {
  const out: BlockDevice[] = [];
  const dir = join(sysBlock, disk);
  const parts: string[] = [];
  for (const e of await readdir(dir).catch(() => [] as string[]))
    if (e.startsWith(disk) && (await exists(join(dir, e, 'partition')))) parts.push(e);
  parts.sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const model = await readText(join(dir, 'device', 'model'));
  const subsystem = (await readlink(join(dir, 'device', 'subsystem')).catch(() => '')).split('/').pop() ?? '';
  const rotational = (await readText(join(dir, 'queue', 'rotational'))) === '1';
  const seen: Seen = { roots, mounted, links, model, subsystem, rotational };
  const diskDev = await describe(seen, disk, dir, 'disk', null);
  const table = diskDev.probe?.table ?? null;
  out.push(finish(diskDev, parts.length > 0 || table !== null));
  for (const p of parts) {
    const d = await describe(seen, p, join(dir, p), 'partition', {
      name: p,
      number: Number(await readText(join(dir, p, 'partition'))) || 0,
      parent: join(roots.dev, disk),
      scheme: table ?? '',
      typeid: '',
      uuid: '',
    });
    out.push(finish(d, false));
  }
  return out;
}

interface Seen {
  roots: BlockDeviceRoots;
  mounted: Map<string, { mountpoint: string; fstype: string }>;
  links: Map<string, string[]>;
  model: string;
  subsystem: string;
  rotational: boolean;
}

async function describe(
  seen: Seen,
  name: string,
  sysDir: string,
  devtype: BlockDevice['devtype'],
  partition: BlockDevice['partition'],
) {
  const { roots, mounted, links, model, subsystem, rotational } = seen;
  const [maj, min] = (await readText(join(sysDir, 'dev'))).split(':').map(Number);
  const devno = `${maj}:${min}`;
  const devname = join(roots.dev, name);
  const size = Number(await readText(join(sysDir, 'size'))) || 0;
  const readOnly = (await readText(join(sysDir, 'ro'))) === '1';
  const holders = (await readdir(join(sysDir, 'holders')).catch(() => [] as string[])).length > 0;
  const sysPath = await realpath(sysDir).catch(() => sysDir);
  const m = mounted.get(devno);
  const head = size > 0 && !m ? await readHead(devname) : null;
  const probed = head ? probe(head) : null;
  const fs = m ?? (probed?.fstype ? { mountpoint: '', fstype: probed.fstype } : null);
  const dev: BlockDevice = {
    devname,
    devtype,
    devmajor: maj || 0,
    devminor: min || 0,
    model,
    devpath: sysPath.startsWith(roots.sys) ? sysPath.slice(roots.sys.length) : sysPath,
    devlinks: links.get(name) ?? [],
    size,
    partition,
    filesystem: fs
      ? { fstype: fs.fstype, mountpoint: fs.mountpoint, label: probed?.label ?? '', uuid: probed?.uuid ?? '' }
      : null,
    available: false,
    connection_type: subsystem,
    is_rotational: rotational,
  };
  return { dev, probe: probed, busy: !!m || readOnly || holders || size === 0 };
}

/** Available = not mounted, no filesystem, no partitions, writable, not held by another device, non-empty. */
function finish(
  d: { dev: BlockDevice; probe: Probe | null; busy: boolean },
  partitioned: boolean,
): BlockDevice {
  d.dev.available = !d.busy && !partitioned && !d.dev.filesystem && !d.probe;
  return d.dev;
}
