import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileBackend } from '../../../src/lib/nbd/file-backend.js';
import { NbdServer } from '../../../src/lib/nbd/server.js';
import { qemuIo, run } from './nbd-tools.js';

const SIZE = 32 * 1024 * 1024;

describe('NBD server with real clients', () => {
  let dir: string;
  let server: NbdServer;
  let backend: FileBackend;
  let uri: string;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-nbd-'));
    await writeFile(join(dir, 'disk.img'), '');
    await truncate(join(dir, 'disk.img'), SIZE);
    backend = await FileBackend.open(join(dir, 'disk.img'));
    server = new NbdServer();
    server.addExport('disk', backend);
    ({ port } = await server.listen('127.0.0.1', 0));
    uri = server.uri('disk');
  });

  afterAll(async () => {
    await server?.close();
    await backend?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('negotiates with nbdinfo (OPT_GO/INFO) and lists exports (OPT_LIST)', async () => {
    const info = await run('nbdinfo', ['--json', uri]);
    const parsed = JSON.parse(info);
    expect(parsed.protocol).toBe('newstyle-fixed');
    expect(parsed.exports[0]['export-size']).toBe(SIZE);
    expect(parsed.exports[0].can_flush).toBe(true);
    expect(parsed.exports[0].can_fua).toBe(true);
    expect(parsed.exports[0].can_trim).toBe(true);
    expect(parsed.exports[0].can_zero).toBe(true);
    const list = await run('nbdinfo', ['--list', '--json', `nbd://127.0.0.1:${port}`]);
    expect(JSON.parse(list).exports.map((e: { 'export-name': string }) => e['export-name'])).toEqual([
      'disk',
    ]);
  });

  it('refuses an unknown export with a clear error', async () => {
    await expect(run('nbdinfo', [`nbd://127.0.0.1:${port}/nope`])).rejects.toThrow(/nope|unknown|not found/i);
  });

  it('serves qemu-io writes with FUA, zeroes, trim, flush and pipelined aio', async () => {
    await qemuIo(uri, [
      'write -P 0xab 0 1M',
      'read -P 0xab 0 1M',
      'write -z 1M 1M',
      'read -P 0 1M 1M',
      'write -f -P 0x5a 2M 4k',
      'flush',
      'discard 4M 64k',
      'aio_write -P 0x11 8M 64k',
      'aio_write -P 0x22 9M 64k',
      'aio_write -P 0x33 10M 1M',
      'aio_flush',
      'read -P 0x11 8M 64k',
      'read -P 0x22 9M 64k',
      'read -P 0x33 10M 1M',
      'read -P 0x5a 2M 4k',
    ]);
    const bytes = await readFile(join(dir, 'disk.img'));
    expect(bytes[0]).toBe(0xab);
    expect(bytes[2 * 1024 * 1024]).toBe(0x5a);
  });

  it('zeroes a range without allocating the holes in it', async () => {
    const allocated = async () => (await stat(join(dir, 'disk.img'))).blocks * 512;
    await qemuIo(uri, ['write -P 0x7e 25M 64k']);
    const before = await allocated();
    // 4 MiB zeroed around 64 KiB of data: the data reads as zero, the rest stays a hole.
    await qemuIo(uri, ['write -z 24M 4M', 'read -P 0 24M 4M']);
    expect(await allocated()).toBe(before);
  });

  it('serves several clients at once and nbdcopy copies the whole export', async () => {
    await Promise.all(
      [0, 1, 2, 3].map((i) =>
        qemuIo(uri, [`write -P ${0x40 + i} ${16 + i}M 1M`, `read -P ${0x40 + i} ${16 + i}M 1M`]),
      ),
    );
    const copy = join(dir, 'copy.img');
    await run('nbdcopy', [uri, copy]);
    const hash = async (p: string) =>
      createHash('sha256')
        .update(await readFile(p))
        .digest('hex');
    expect(await hash(copy)).toBe(await hash(join(dir, 'disk.img')));
  });

  it('survives a client that disconnects in the middle of a request', async () => {
    const sock = connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      let greeted = false;
      sock.on('data', (d) => {
        if (!greeted && d.length >= 18) {
          greeted = true;
          const name = Buffer.from('disk');
          const opt = Buffer.alloc(4 + 16 + 4 + name.length + 2);
          opt.writeUInt32BE(3, 0); // client flags
          opt.writeBigUInt64BE(0x49484156454f5054n, 4);
          opt.writeUInt32BE(7, 12); // OPT_GO
          opt.writeUInt32BE(4 + name.length + 2, 16);
          opt.writeUInt32BE(name.length, 20);
          name.copy(opt, 24);
          sock.write(opt);
          // a WRITE header announcing 1 MiB, then only part of the payload, then gone
          const req = Buffer.alloc(28);
          req.writeUInt32BE(0x25609513, 0);
          req.writeUInt16BE(1, 6);
          req.writeBigUInt64BE(0n, 16);
          req.writeUInt32BE(1024 * 1024, 24);
          sock.write(Buffer.concat([req, Buffer.alloc(1000, 1)]), () => {
            sock.destroy();
            resolve();
          });
        }
      });
    });
    await qemuIo(uri, ['read -P 0xab 0 1M']);
  });
});
