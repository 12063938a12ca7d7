import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { createServer, connect as netConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BlockBackend } from '../../../src/lib/nbd/backend.js';
import { NbdClient, parseNbdUri } from '../../../src/lib/nbd/client.js';
import { FileBackend } from '../../../src/lib/nbd/file-backend.js';
import { NbdServer } from '../../../src/lib/nbd/server.js';
import { withUnusedPorts } from '../../helpers/ports.js';
import { waitFor } from '../../helpers/wait.js';
import { startTool } from './nbd-tools.js';

describe('NBD client', () => {
  let dir: string;
  let server: NbdServer;
  let backend: FileBackend;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-nbdc-'));
    await writeFile(join(dir, 'disk.img'), '');
    await truncate(join(dir, 'disk.img'), 16 * 1024 * 1024);
    backend = await FileBackend.open(join(dir, 'disk.img'));
    server = new NbdServer();
    server.addExport('disk', backend);
    await server.listen('127.0.0.1', 0);
  });

  afterAll(async () => {
    await server?.close();
    await backend?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('parses nbd URIs', () => {
    expect(parseNbdUri('nbd://10.0.0.1:10810/abc?uuid=abc')).toEqual({
      host: '10.0.0.1',
      port: 10810,
      exportName: 'abc',
    });
    expect(parseNbdUri('nbd://h/x').port).toBe(10809);
    expect(() => parseNbdUri('nvmf://h/x')).toThrow(/nbd/);
  });

  it('pipelines reads and writes against our server', async () => {
    const c = await NbdClient.connect(server.uri('disk'));
    expect(c.size).toBe(16 * 1024 * 1024);
    const blocks = Array.from({ length: 64 }, () => randomBytes(64 * 1024));
    await Promise.all(blocks.map((b, i) => c.write(b, i * 64 * 1024, i % 7 === 0)));
    await c.flush();
    const back = Array.from({ length: 64 }, () => Buffer.alloc(64 * 1024));
    await Promise.all(back.map((b, i) => c.read(b, i * 64 * 1024)));
    for (const [i, b] of back.entries()) expect(b.equals(blocks[i])).toBe(true);
    await c.writeZeroes(0, 64 * 1024, false);
    const z = Buffer.alloc(64 * 1024, 1);
    await c.read(z, 0);
    expect(z.every((x) => x === 0)).toBe(true);
    await c.close();
  });

  it('reads of every size, many in flight, land byte-exact (payloads read straight into the buffers)', async () => {
    // Sizes around the scratch buffer and the direct-read threshold: a reply's payload may start in
    // the scratch buffer and go on straight into the caller's buffer, or several replies share a read.
    const c = await NbdClient.connect(server.uri('disk'));
    const image = randomBytes(16 * 1024 * 1024);
    await c.write(image, 0, false);
    const sizes = [
      1,
      511,
      4096,
      16 * 1024 - 1,
      16 * 1024,
      16 * 1024 + 1,
      65_537,
      256 * 1024,
      256 * 1024 + 7,
      1 << 20,
      3 << 20,
    ];
    const reads = Array.from({ length: 200 }, (_, i) => {
      const size = sizes[i % sizes.length];
      const offset = (i * 7919 * 4096 + i) % (image.length - size);
      return { size, offset, buf: Buffer.alloc(size) };
    });
    await Promise.all(reads.map((r) => c.read(r.buf, r.offset)));
    for (const r of reads) expect(r.buf.equals(image.subarray(r.offset, r.offset + r.size))).toBe(true);
    // One at a time too: each payload then mostly arrives after its header, read directly.
    for (const r of reads.slice(0, 30)) {
      const b = Buffer.alloc(r.size);
      await c.read(b, r.offset);
      expect(b.equals(image.subarray(r.offset, r.offset + r.size))).toBe(true);
    }
    await c.close();
  });

  it('writes of every size, many in flight, land byte-exact (the server reads payloads straight into their buffers)', async () => {
    // The server's side of the same: a write's payload may start in the connection's read buffer
    // (with its header and earlier requests) and go on straight into the payload's own buffer.
    const c = await NbdClient.connect(server.uri('disk'));
    const sizes = [1, 4096, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 65_537, 256 * 1024 + 7, 1 << 20];
    let offset = 0;
    const writes = Array.from({ length: 24 }, (_, i) => {
      const w = { offset, buf: randomBytes(sizes[i % sizes.length]) };
      offset += w.buf.length + 13; // disjoint: concurrent writes to one range have no order
      return w;
    });
    expect(offset).toBeLessThan(16 * 1024 * 1024);
    await Promise.all(writes.map((w) => c.write(w.buf, w.offset, false)));
    // One at a time too, each to the range of another: each payload then mostly arrives after its
    // header, read directly.
    for (const w of writes.slice(0, 8)) {
      w.buf = randomBytes(w.buf.length);
      await c.write(w.buf, w.offset, false);
    }
    const onDisk = await readFile(join(dir, 'disk.img'));
    for (const w of writes)
      expect(onDisk.subarray(w.offset, w.offset + w.buf.length).equals(w.buf)).toBe(true);
    await c.close();
  });

  it('reports an unknown export and a failed request with an errno', async () => {
    await expect(NbdClient.connect(`nbd://${server.endpoint}/missing`)).rejects.toThrow(/missing/);
    const c = await NbdClient.connect(server.uri('disk'));
    await expect(c.read(Buffer.alloc(4096), 16 * 1024 * 1024)).rejects.toMatchObject({ errno: 22 });
    await c.close();
  });

  it('a connection lost while a read reply is arriving fails that read (it had left the pending set)', async () => {
    const own = new NbdServer();
    own.addExport('disk', backend);
    await own.listen('127.0.0.1', 0);
    const c = await NbdClient.connect(own.uri('disk'));
    let progressed = 0;
    // 16 MiB in one reply: the first bytes are in while most are still on their way; then the server goes.
    const read = c.read(Buffer.alloc(16 * 1024 * 1024), 0, () => {
      if (progressed++ === 0) void own.close();
    });
    await expect(read).rejects.toThrow(/connection closed|ECONNRESET/);
    expect(progressed).toBeGreaterThan(0);
  });

  it('keep-alive: a write held by a slow disk completes; a server that goes silent is dropped', async () => {
    // A disk whose writes wait until released: the server answers everything else meanwhile.
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let probes = 0;
    const slow: BlockBackend = {
      size: backend.size,
      read: (b, o) => {
        if (b.length === 0) probes++; // a keep-alive probe: a zero-length read
        return backend.read(b, o);
      },
      write: async (b, o, fua) => {
        await held;
        await backend.write(b, o, fua);
      },
      flush: () => backend.flush(),
      trim: (o, l) => backend.trim(o, l),
      writeZeroes: (o, l, fua) => backend.writeZeroes(o, l, fua),
    };
    server.addExport('slow', slow);
    const opts = { keepAliveMs: 600, requestTimeoutMs: 60_000 };
    const c = await NbdClient.connect(server.uri('slow'), opts);
    let written = false;
    const write = c.write(Buffer.alloc(4096, 7), 0, false).then(() => {
      written = true;
    });
    // Several keep-alive periods with the write unanswered: the probes are, so the connection stays.
    await waitFor(() => probes >= 3, { what: 'three keep-alive probes answered' });
    expect(c.closed).toBe(false);
    expect(written).toBe(false);
    release();
    await write;
    await c.close();

    // A link that drops everything (no reset): a proxy that stops passing bytes once muted.
    let muted = false;
    const sockets: Socket[] = [];
    const proxy = createServer((down) => {
      const up = netConnect(Number(server.endpoint.split(':').pop()), '127.0.0.1');
      sockets.push(down, up);
      down.on('data', (d) => muted || up.write(d));
      up.on('data', (d) => muted || down.write(d));
      down.on('error', () => up.destroy());
      up.on('error', () => down.destroy());
      down.on('close', () => up.destroy());
      up.on('close', () => down.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const port = (proxy.address() as { port: number }).port;
      const cut = await NbdClient.connect(`nbd://127.0.0.1:${port}/disk`, opts);
      await cut.write(Buffer.alloc(4096, 8), 0, false);
      muted = true;
      await expect(cut.write(Buffer.alloc(4096, 9), 0, false)).rejects.toThrow(
        /no answer from the server for 600 ms, a keep-alive probe included/,
      );
      expect(cut.closed).toBe(true);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    }
  });

  it('interoperates with nbdkit and fails pending I/O when the server dies', async () => {
    // A port below the ephemeral range, again on a new one when nbdkit cannot bind it.
    const { kit, c } = await withUnusedPorts(1, async ([port]) => {
      const kit = startTool('nbdkit', ['-f', '-p', String(port), '-i', '127.0.0.1', 'memory', '8M']);
      const c = await waitFor(
        async () => {
          const c = await NbdClient.connect(`nbd://127.0.0.1:${port}/`).catch(() => null);
          if (!c) await kit.failIfExited();
          return c;
        },
        { what: 'nbdkit' },
      ).catch((e) => {
        kit.kill('SIGKILL');
        throw e;
      });
      return { kit, c };
    });
    try {
      expect(c.size).toBe(8 * 1024 * 1024);
      const data = randomBytes(1024 * 1024);
      await c.write(data, 1024 * 1024, true);
      const back = Buffer.alloc(data.length);
      await c.read(back, 1024 * 1024);
      expect(back.equals(data)).toBe(true);
      let lost: Error | null = null;
      c.onClose((e) => {
        lost = e;
      });
      kit.kill('SIGKILL');
      await waitFor(() => lost, { what: 'connection loss' });
      await expect(c.read(back, 0)).rejects.toThrow(/closed|ECONNRESET/);
    } finally {
      kit.kill('SIGKILL');
    }
  });
});
