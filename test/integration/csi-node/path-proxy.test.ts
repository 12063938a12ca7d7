import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { PathProxy } from '../../../src/daemons/csi-node/proxy-server.js';
import { BlockIoError } from '../../../src/lib/nbd/backend.js';
import { NbdClient } from '../../../src/lib/nbd/client.js';
import { FileBackend } from '../../../src/lib/nbd/file-backend.js';
import { Errno } from '../../../src/lib/nbd/protocol.js';
import { NbdServer } from '../../../src/lib/nbd/server.js';
import { waitFor } from '../../helpers/wait.js';

const MiB = 1 << 20;

/** One NBD target: a file served by our NBD server on a loopback port. */
async function target(dir: string, name: string, fill: number | Buffer, port = 0) {
  const file = join(dir, `${name}.img`);
  await writeFile(file, typeof fill === 'number' ? Buffer.alloc(4 * MiB, fill) : fill);
  const backend = await FileBackend.open(file);
  const server = new NbdServer();
  const addr = await server.listen('127.0.0.1', port);
  server.addExport(name, backend);
  return { file, backend, server, port: addr.port, uri: server.uri(name) };
}

/**
 * The path proxy on real sockets: the block device's side is an NBD client on the proxy's unix
 * socket, the target side real NBD servers. Re-pointing swaps targets under a live client; a lost
 * path is reconnected while requests wait; the virtual tail reads as zeroes and refuses writes.
 */
describe('csi-node path proxy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'storctl-proxy-'));
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanup.splice(0).reverse()) await c().catch(() => {});
  });

  async function proxyTo(uri: string, advertisedSize?: number, pathTimeoutMs = 10_000) {
    const logged: string[] = [];
    const proxy = new PathProxy({
      socketPath: join(dir, 'nbd.sock'),
      controlPath: join(dir, 'ctl.sock'),
      target: uri,
      advertisedSize,
      pathTimeoutMs,
      log: (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields ?? {})}`),
    });
    await proxy.start();
    cleanup.push(() => proxy.close());
    return { proxy, logged };
  }

  /** A target serving `data`, the proxy in front of it, and an NBD client on the proxy's socket. */
  async function proxied(
    name: string,
    data: number | Buffer,
    o: { advertisedSize?: number; pathTimeoutMs?: number } = {},
  ) {
    const a = await target(dir, name, data);
    cleanup.push(() => a.server.close());
    const { proxy, logged } = await proxyTo(a.uri, o.advertisedSize, o.pathTimeoutMs);
    const local = await connectUnix(join(dir, 'nbd.sock'));
    cleanup.push(() => local.close());
    return { a, proxy, logged, local };
  }

  it('re-points a live client to another target and reconnects a lost path while requests wait', async () => {
    const a = await target(dir, 'a', 0xaa);
    const b = await target(dir, 'b', 0xbb);
    cleanup.push(
      () => a.server.close(),
      () => b.server.close(),
    );
    const { proxy } = await proxyTo(a.uri);
    const local = await connectUnix(join(dir, 'nbd.sock'));
    cleanup.push(() => local.close());
    expect(local.size).toBe(4 * MiB);

    const buf = Buffer.alloc(4096);
    await local.read(buf, 0);
    expect(buf[0]).toBe(0xaa);
    expect((await proxy.repoint(b.uri)).repoints).toBe(1);
    await local.read(buf, 0);
    expect(buf[0]).toBe(0xbb); // same client, new target
    await local.write(Buffer.alloc(4096, 0x11), 8192, true);

    // The target goes away and comes back on the same port: a request issued meanwhile waits, then succeeds.
    await b.server.close();
    await waitFor(() => !proxy.status().connected, { what: 'path lost' });
    const pending = local.read(buf, 8192);
    const back = new NbdServer();
    await back.listen('127.0.0.1', b.port);
    back.addExport('b', b.backend);
    cleanup.push(() => back.close());
    await pending;
    expect(buf[0]).toBe(0x11);
    expect(proxy.status()).toMatchObject({ connected: true, target: b.uri });
  });

  it('re-pointed away from a target that stopped answering, a request in flight goes to the new target at once', async () => {
    // Target a stops answering reads (a hung io-engine keeps its TCP connection open).
    const file = join(dir, 'hung.img');
    await writeFile(file, Buffer.alloc(4 * MiB, 0xaa));
    const real = await FileBackend.open(file);
    let stalled = false;
    let stuckReads = 0;
    const hung = Object.create(real) as FileBackend;
    hung.read = (buf, offset) => {
      if (!stalled) return real.read(buf, offset);
      stuckReads++;
      return new Promise<void>(() => {});
    };
    const a = new NbdServer();
    await a.listen('127.0.0.1', 0);
    a.addExport('hung', hung);
    const b = await target(dir, 'b', 0xbb);
    cleanup.push(
      () => a.close(),
      () => b.server.close(),
      () => real.close(),
    );
    const { proxy } = await proxyTo(a.uri('hung'));
    const local = await connectUnix(join(dir, 'nbd.sock'));
    cleanup.push(() => local.close());
    const buf = Buffer.alloc(4096);
    await local.read(buf, 0);
    expect(buf[0]).toBe(0xaa);

    stalled = true;
    let answered = false;
    const pending = local.read(buf, 0).then(() => {
      answered = true;
    });
    await waitFor(() => stuckReads === 1, { what: 'the read stuck at the hung target' });
    await proxy.repoint(b.uri);
    // Answered by b well before the request timeout (30 s) of the connection to a would end it.
    await waitFor(() => answered, { what: 'the read answered through the new target', timeoutMs: 10_000 });
    await pending;
    expect(buf[0]).toBe(0xbb);
  });

  it('advertises a larger size: the tail past the volume reads as zeroes and refuses writes', async () => {
    const { a, proxy, local } = await proxied('tail', 0xcc, { advertisedSize: 64 * MiB });
    expect(local.size).toBe(64 * MiB);
    const buf = Buffer.alloc(8192, 0xff);
    await local.read(buf, 4 * MiB - 4096); // half in the volume, half past it
    expect(buf[0]).toBe(0xcc);
    expect(buf[4096]).toBe(0);
    await expect(local.write(Buffer.alloc(4096), 8 * MiB, false)).rejects.toThrow(
      /remote error ENOSPC \(28\)/,
    );
    // The volume grows at its target: a refresh learns the new size.
    await truncate(a.file, 8 * MiB);
    a.backend.size = 8 * MiB;
    expect((await proxy.refresh()).size).toBe(8 * MiB);
    await local.write(Buffer.alloc(4096, 0x22), 8 * MiB - 4096, true);
  });

  it('remembers when the target refused a write for want of space (a full pool), not a write past the end', async () => {
    const { a, proxy, local } = await proxied('full', 0xdd, { advertisedSize: 64 * MiB });
    await expect(local.write(Buffer.alloc(4096), 8 * MiB, false)).rejects.toThrow(/ENOSPC/);
    expect(proxy.status().noSpaceAt).toBeUndefined();
    // The target's pool fills up: its writes fail with ENOSPC, as the io-engine's do (pool-space.ts).
    const write = a.backend.write.bind(a.backend);
    a.backend.write = () => Promise.reject(new BlockIoError("pool 'p' is full", Errno.ENOSPC));
    const before = Date.now();
    await expect(local.write(Buffer.alloc(4096), 0, false)).rejects.toThrow(/ENOSPC/);
    expect(proxy.status().noSpaceAt).toBeGreaterThanOrEqual(before);
    a.backend.write = write;
    await local.write(Buffer.alloc(4096, 0x33), 0, true);
  });

  it('a target that shut itself down (NBD_ESHUTDOWN) fails its path, not the request: held until the proxy is re-pointed', async () => {
    // Target a's nexus shuts itself down: its requests are answered ESHUTDOWN, as the io-engine's are.
    const { a, proxy, logged, local } = await proxied('shut', 0xaa);
    const b = await target(dir, 'b-shut', 0xbb);
    cleanup.push(() => b.server.close());
    const shutDown = () =>
      Promise.reject(
        new BlockIoError('nexus n shut down: NexusInfo could not be persisted', Errno.ESHUTDOWN),
      );
    a.backend.write = shutDown;
    a.backend.flush = shutDown;
    let acknowledged = false;
    const write = local.write(Buffer.alloc(4096, 0x44), 0, false).then(() => {
      acknowledged = true;
    });
    await waitFor(() => logged.some((l) => l.startsWith('target shut down')), { what: 'the path given up' });
    expect(acknowledged).toBe(false);
    await proxy.repoint(b.uri);
    await write;
    await local.flush();
    const buf = Buffer.alloc(4096);
    await local.read(buf, 0);
    expect(buf.equals(Buffer.alloc(4096, 0x44))).toBe(true);
  });

  it('a request a shut-down target keeps refusing fails once the path timeout has passed', async () => {
    const { a, local } = await proxied('gone', 0xaa, { pathTimeoutMs: 1500 });
    a.backend.write = () => Promise.reject(new BlockIoError('nexus n is shut down', Errno.ESHUTDOWN));
    await expect(local.write(Buffer.alloc(4096), 0, false)).rejects.toThrow(/ESHUTDOWN|EIO|no path/);
  });

  it('forwards reads as their bytes arrive, many at once on one connection, each reply whole and its own', async () => {
    const data = randomBytes(40 * MiB);
    const { local } = await proxied('cut', data);
    // Large reads (forwarded while they arrive, one at a time on the wire) mixed with small ones
    // (whole replies that wait their turn), all in flight together; every byte must be its own.
    const reads = Array.from({ length: 24 }, (_, i) => {
      const length = i % 3 === 2 ? 4096 : (1 + (i % 4)) * MiB + 512 * (i % 5);
      const offset = (i * 1_638_400 + 4096 * i) % (data.length - length);
      return { offset, buf: Buffer.alloc(length) };
    });
    await Promise.all(reads.map((r) => local.read(r.buf, r.offset)));
    for (const r of reads) expect(r.buf.equals(data.subarray(r.offset, r.offset + r.buf.length))).toBe(true);
  });

  it('a read whose path is lost mid-reply continues where it stopped once the path is back', async () => {
    const data = randomBytes(33 * MiB);
    const { a, local } = await proxied('cut-resume', data);
    let cut = false;
    const buf = Buffer.alloc(32 * MiB);
    const read = local.read(buf, MiB, () => {
      if (cut) return;
      cut = true;
      // The target goes away mid-reply and comes back on the same port.
      void a.server.close().then(async () => {
        const back = new NbdServer();
        await back.listen('127.0.0.1', a.port);
        back.addExport('cut-resume', a.backend);
        cleanup.push(() => back.close());
      });
    });
    await read;
    expect(cut).toBe(true);
    expect(buf.equals(data.subarray(MiB, 33 * MiB))).toBe(true);
  });

  it('a read whose path fails after its reply started closes the connection instead of answering wrong bytes', async () => {
    const { a, logged, local } = await proxied('cut-fail', randomBytes(33 * MiB), { pathTimeoutMs: 300 });
    let targetClosed = false;
    // The first bytes are here, so the proxy has sent the reply's success header: the target
    // goes away for good before the rest has left it.
    const read = local.read(Buffer.alloc(32 * MiB), 0, () => {
      if (!targetClosed) {
        targetClosed = true;
        void a.server.close();
      }
    });
    await expect(read).rejects.toThrow(/connection closed/);
    expect(targetClosed).toBe(true);
    expect(logged.join('\n')).toContain('read failed after its reply started');
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
});

/** An NBD client on a unix socket (NbdClient speaks TCP; a tiny shim connects it to a path). */
async function connectUnix(path: string): Promise<NbdClient> {
  const net = await import('node:net');
  const server = net.createServer((socket) => {
    const upstream = net.connect(path);
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  const client = await NbdClient.connect({ host: '127.0.0.1', port, exportName: 'volume' });
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    server.close();
  };
  return client;
}
