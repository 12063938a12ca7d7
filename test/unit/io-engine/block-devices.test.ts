import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BlockDeviceRoots, listBlockDevices } from '../../../src/daemons/io-engine/block-devices.js';

/**
 * listBlockDevices over a sysfs / dev / mountinfo laid out in a temp dir: the device "nodes" are
 * regular files holding real images (mkfs.ext4 on a file needs no privileges).
 */
describe('io-engine block devices', () => {
  let dir: string;
  let roots: BlockDeviceRoots;

  const disk = (
    name: string,
    o: { devno: string; sectors: number; ro?: boolean; holders?: string[]; model?: string; parts?: string[] },
  ) => {
    const d = join(roots.sys, 'devices', 'virtual', 'block', name);
    mkdirSync(join(d, 'holders'), { recursive: true });
    mkdirSync(join(d, 'queue'), { recursive: true });
    writeFileSync(join(d, 'dev'), `${o.devno}\n`);
    writeFileSync(join(d, 'size'), `${o.sectors}\n`);
    writeFileSync(join(d, 'ro'), o.ro ? '1\n' : '0\n');
    writeFileSync(join(d, 'queue', 'rotational'), '0\n');
    if (o.model) {
      mkdirSync(join(d, 'device'), { recursive: true });
      writeFileSync(join(d, 'device', 'model'), `${o.model}   \n`);
    }
    for (const h of o.holders ?? []) mkdirSync(join(d, 'holders', h));
    for (const [i, p] of (o.parts ?? []).entries()) {
      mkdirSync(join(d, p, 'holders'), { recursive: true });
      writeFileSync(join(d, p, 'partition'), `${i + 1}\n`);
      writeFileSync(join(d, p, 'dev'), `${o.devno.split(':')[0]}:${i + 1}\n`);
      writeFileSync(join(d, p, 'size'), '2048\n');
      writeFileSync(join(d, p, 'ro'), '0\n');
    }
    symlinkSync(d, join(roots.sys, 'block', name));
    writeFileSync(join(roots.dev, name), Buffer.alloc(0));
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-blk-'));
    roots = { sys: join(dir, 'sys'), dev: join(dir, 'dev'), mountinfo: join(dir, 'mountinfo') };
    mkdirSync(join(roots.sys, 'block'), { recursive: true });
    mkdirSync(roots.dev, { recursive: true });
    writeFileSync(roots.mountinfo, '');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reports Mayastor BlockDevice fields and marks only unused devices available', async () => {
    disk('sda', { devno: '8:0', sectors: 131072, model: 'QEMU HARDDISK' });
    disk('sdb', { devno: '8:16', sectors: 131072 });
    disk('sdc', { devno: '8:32', sectors: 131072, ro: true });
    disk('sdd', { devno: '8:48', sectors: 131072, holders: ['dm-0'] });
    disk('sde', { devno: '8:64', sectors: 131072, parts: ['sde1', 'sde2'] });
    disk('loop0', { devno: '7:0', sectors: 0 });
    writeFileSync(join(roots.dev, 'sde'), Buffer.alloc(0));
    writeFileSync(roots.mountinfo, '27 1 8:16 / /mnt/data\\040dir rw,relatime - xfs /dev/sdb rw\n');
    mkdirSync(join(roots.dev, 'disk', 'by-id'), { recursive: true });
    symlinkSync('../../sda', join(roots.dev, 'disk', 'by-id', 'ata-QEMU_HARDDISK_1'));

    const all = await listBlockDevices(true, roots);
    const by = new Map(all.map((d) => [d.devname.slice(roots.dev.length + 1), d]));
    expect([...by.keys()]).toEqual(['loop0', 'sda', 'sdb', 'sdc', 'sdd', 'sde', 'sde1', 'sde2']);
    expect(by.get('sda')).toEqual({
      devname: join(roots.dev, 'sda'),
      devtype: 'disk',
      devmajor: 8,
      devminor: 0,
      model: 'QEMU HARDDISK',
      devpath: '/devices/virtual/block/sda',
      devlinks: [join(roots.dev, 'disk', 'by-id', 'ata-QEMU_HARDDISK_1')],
      size: 131072,
      partition: null,
      filesystem: null,
      available: true,
      connection_type: '',
      is_rotational: false,
    });
    expect(by.get('sdb')?.filesystem).toEqual({
      fstype: 'xfs',
      mountpoint: '/mnt/data dir',
      label: '',
      uuid: '',
    });
    expect(by.get('sdb')?.available).toBe(false); // mounted
    expect(by.get('sdc')?.available).toBe(false); // read-only
    expect(by.get('sdd')?.available).toBe(false); // held by device-mapper
    expect(by.get('sde')?.available).toBe(false); // partitioned
    expect(by.get('loop0')?.available).toBe(false); // no medium
    expect(by.get('sde2')).toMatchObject({
      devtype: 'partition',
      devmajor: 8,
      devminor: 2,
      size: 2048,
      available: true,
      partition: { name: 'sde2', number: 2, parent: join(roots.dev, 'sde') },
    });

    const usable = await listBlockDevices(false, roots);
    expect(usable.map((d) => d.devname.slice(roots.dev.length + 1))).toEqual(['sda', 'sde1', 'sde2']);
  });

  it('finds an unmounted ext4 filesystem and an MBR partition table by their signatures', async () => {
    disk('vdb', { devno: '254:16', sectors: 65536 });
    disk('vdc', { devno: '254:32', sectors: 65536 });
    const img = join(roots.dev, 'vdb');
    execFileSync('truncate', ['-s', '32M', img]);
    execFileSync('mkfs.ext4', ['-q', '-F', '-L', 'data', '-U', '0a1b2c3d-0000-4000-8000-00000000beef', img]);
    const mbr = Buffer.alloc(1024);
    mbr.writeUInt16LE(0xaa55, 510);
    mbr[446 + 4] = 0x83; // one Linux partition entry
    writeFileSync(join(roots.dev, 'vdc'), mbr);

    const all = await listBlockDevices(true, roots);
    const vdb = all.find((d) => d.devname.endsWith('vdb'))!;
    expect(vdb.filesystem).toEqual({
      fstype: 'ext4',
      mountpoint: '',
      label: 'data',
      uuid: '0a1b2c3d-0000-4000-8000-00000000beef',
    });
    expect(vdb.available).toBe(false);
    const vdc = all.find((d) => d.devname.endsWith('vdc'))!;
    expect(vdc.filesystem).toBeNull();
    expect(vdc.available).toBe(false);
    expect(await listBlockDevices(false, roots)).toEqual([]);
  });
});
