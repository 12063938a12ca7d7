import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileBackend } from '../../../src/lib/nbd/file-backend.js';
import { Cmd, IHAVEOPT, Info, Opt, REQUEST_MAGIC, Rep } from '../../../src/lib/nbd/protocol.js';
import { NbdServer } from '../../../src/lib/nbd/server.js';

const SIZE = 1024 * 1024;

/** A raw protocol conversation: bytes out, exact byte counts in. */
class Wire {
  private buf = Buffer.alloc(0);
  private want: { n: number; resolve: (b: Buffer) => void } | null = null;
  closed = false;
  constructor(readonly sock: Socket) {
    sock.on('data', (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.feed();
    });
    sock.on('close', () => {
      this.closed = true;
    });
  }
  private feed() {
    if (this.want && this.buf.length >= this.want.n) {
      const w = this.want;
      this.want = null;
      const out = this.buf.subarray(0, w.n);
      this.buf = this.buf.subarray(w.n);
      w.resolve(out);
    }
  }
  read(n: number): Promise<Buffer> {
    return new Promise((resolve) => {
      this.want = { n, resolve };
      this.feed();
    });
  }
  option(code: number, data = Buffer.alloc(0)) {
    const h = Buffer.alloc(16);
    h.writeBigUInt64BE(IHAVEOPT, 0);
    h.writeUInt32BE(code, 8);
    h.writeUInt32BE(data.length, 12);
    this.sock.write(Buffer.concat([h, data]));
  }
  async optReply(): Promise<{ option: number; type: number; data: Buffer }> {
    const h = await this.read(20);
    const len = h.readUInt32BE(16);
    return {
      option: h.readUInt32BE(8),
      type: h.readUInt32BE(12),
      data: len ? await this.read(len) : Buffer.alloc(0),
    };
  }
  request(type: number, offset: number, length: number, handle: number) {
    const r = Buffer.alloc(28);
    r.writeUInt32BE(REQUEST_MAGIC, 0);
    r.writeUInt16BE(type, 6);
    r.writeUInt32BE(handle, 12);
    r.writeBigUInt64BE(BigInt(offset), 16);
    r.writeUInt32BE(length, 24);
    this.sock.write(r);
  }
}

const nameData = (name: string, infos: number[] = []) => {
  const n = Buffer.from(name);
  const d = Buffer.alloc(4 + n.length + 2 + infos.length * 2);
  d.writeUInt32BE(n.length, 0);
  n.copy(d, 4);
  d.writeUInt16BE(infos.length, 4 + n.length);
  for (const [i, t] of infos.entries()) d.writeUInt16BE(t, 6 + n.length + i * 2);
  return d;
};

describe('NBD negotiation details', () => {
  let dir: string;
  let server: NbdServer;
  let backend: FileBackend;
  let port: number;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'storctl-nbdneg-'));
    await writeFile(join(dir, 'd.img'), '');
    await truncate(join(dir, 'd.img'), SIZE);
    backend = await FileBackend.open(join(dir, 'd.img'));
    server = new NbdServer();
    server.addExport('disk', backend);
    ({ port } = await server.listen('127.0.0.1', 0));
  });

  afterAll(async () => {
    await server?.close();
    await backend?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function open(clientFlags: number): Promise<Wire> {
    const w = new Wire(connect(port, '127.0.0.1'));
    const greet = await w.read(18);
    expect(greet.subarray(0, 8).toString()).toBe('NBDMAGIC');
    expect(greet.readUInt16BE(16) & 1).toBe(1); // fixed newstyle
    const f = Buffer.alloc(4);
    f.writeUInt32BE(clientFlags, 0);
    w.sock.write(f);
    return w;
  }

  it('declines structured replies, answers INFO and stays in negotiation, ends on ABORT', async () => {
    const w = await open(3);
    w.option(Opt.STRUCTURED_REPLY);
    expect((await w.optReply()).type).toBe(Rep.ERR_UNSUP);
    w.option(Opt.INFO, nameData('disk', [Info.NAME]));
    const infos: Buffer[] = [];
    for (;;) {
      const r = await w.optReply();
      if (r.type === Rep.ACK) break;
      expect(r.type).toBe(Rep.INFO);
      infos.push(r.data);
    }
    const exp = infos.find((d) => d.readUInt16BE(0) === Info.EXPORT)!;
    expect(Number(exp.readBigUInt64BE(2))).toBe(SIZE);
    expect(
      infos
        .find((d) => d.readUInt16BE(0) === Info.NAME)!
        .subarray(2)
        .toString(),
    ).toBe('disk');
    w.option(Opt.GO, nameData('missing'));
    const miss = await w.optReply();
    expect(miss.type).toBe(Rep.ERR_UNKNOWN);
    expect(miss.data.toString()).toMatch(/missing/);
    w.option(Opt.INFO, Buffer.from([0, 0, 0, 9])); // malformed
    expect((await w.optReply()).type).toBe(Rep.ERR_INVALID);
    w.option(Opt.ABORT);
    expect((await w.optReply()).type).toBe(Rep.ACK);
    w.sock.destroy();
  });

  it('supports old-style EXPORT_NAME (with and without the 124 zero bytes) and rejects out-of-range I/O', async () => {
    for (const [flags, replyLen] of [
      [3, 10],
      [1, 134],
    ]) {
      const w = await open(flags);
      w.option(Opt.EXPORT_NAME, Buffer.from('disk'));
      const r = await w.read(replyLen);
      expect(Number(r.readBigUInt64BE(0))).toBe(SIZE);
      w.request(Cmd.READ, SIZE - 512, 4096, 7);
      const reply = await w.read(16);
      expect(reply.readUInt32BE(4)).toBe(22); // EINVAL
      expect(reply.readUInt32BE(12)).toBe(7);
      w.request(Cmd.WRITE_ZEROES, SIZE, 4096, 8);
      expect((await w.read(16)).readUInt32BE(4)).toBe(28); // ENOSPC
      w.request(Cmd.BLOCK_STATUS, 0, 4096, 9);
      expect((await w.read(16)).readUInt32BE(4)).toBe(22);
      w.request(Cmd.DISC, 0, 0, 10);
      await new Promise<void>((resolve) => (w.closed ? resolve() : w.sock.once('close', () => resolve())));
    }
  });
});
