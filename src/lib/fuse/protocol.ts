/**
 * The few parts of the Linux FUSE wire protocol (include/uapi/linux/fuse.h, protocol 7.x) that a
 * server of one regular file needs. Every message starts with a header; integers are
 * little-endian on every architecture Linux runs FUSE on that we build for (x86-64, arm64).
 */

export const FUSE_KERNEL_VERSION = 7;
/** 7.28 added max_pages (requests of up to 1 MiB); newer kernels speak newer minors to us. */
export const FUSE_MIN_MINOR = 28;
/** The minor we answer with: the structures below are the ones of 7.31. */
export const FUSE_OUR_MINOR = 31;

export const Opcode = {
  LOOKUP: 1,
  FORGET: 2,
  GETATTR: 3,
  SETATTR: 4,
  OPEN: 14,
  READ: 15,
  WRITE: 16,
  STATFS: 17,
  RELEASE: 18,
  FSYNC: 20,
  FLUSH: 25,
  INIT: 26,
  ACCESS: 34,
  INTERRUPT: 36,
  DESTROY: 38,
  BATCH_FORGET: 42,
  FALLOCATE: 43,
} as const;

/** Requests the kernel sends without expecting an answer. */
export const NO_REPLY: ReadonlySet<number> = new Set([Opcode.FORGET, Opcode.BATCH_FORGET, Opcode.INTERRUPT]);

export const InitFlag = {
  ASYNC_READ: 1 << 0,
  BIG_WRITES: 1 << 5,
  ASYNC_DIO: 1 << 15,
  MAX_PAGES: 1 << 22,
} as const;

/** fuse_open_out.open_flags: bypass the page cache (the loop device on top does its own caching). */
export const FOPEN_DIRECT_IO = 1 << 0;
/** fuse_setattr_in.valid: the size changes. */
export const FATTR_SIZE = 1 << 3;
/** fallocate(2) modes. */
export const FALLOC_FL_KEEP_SIZE = 0x01;
export const FALLOC_FL_PUNCH_HOLE = 0x02;
export const FALLOC_FL_ZERO_RANGE = 0x10;

/** sizeof(struct fuse_in_header) / fuse_out_header. */
export const IN_HEADER = 40;
export const OUT_HEADER = 16;
/** sizeof(struct fuse_write_in): a WRITE's data starts at IN_HEADER + WRITE_IN. */
export const WRITE_IN = 40;

export interface InHeader {
  len: number;
  opcode: number;
  unique: bigint;
  nodeid: bigint;
}

export function parseInHeader(b: Buffer): InHeader {
  return {
    len: b.readUInt32LE(0),
    opcode: b.readUInt32LE(4),
    unique: b.readBigUInt64LE(8),
    nodeid: b.readBigUInt64LE(16),
  };
}

/** fuse_out_header: `error` is 0 or a negative errno. */
export function writeOutHeader(b: Buffer, len: number, error: number, unique: bigint): void {
  b.writeUInt32LE(len, 0);
  b.writeInt32LE(error, 4);
  b.writeBigUInt64LE(unique, 8);
}

/** fuse_init_in: the kernel's protocol version and what it offers. */
export function parseInitIn(body: Buffer): {
  major: number;
  minor: number;
  maxReadahead: number;
  flags: number;
} {
  return {
    major: body.readUInt32LE(0),
    minor: body.readUInt32LE(4),
    maxReadahead: body.readUInt32LE(8),
    flags: body.readUInt32LE(12),
  };
}

/** fuse_init_out (64 bytes). */
export function initOut(o: {
  minor: number;
  maxReadahead: number;
  flags: number;
  maxBackground: number;
  maxWrite: number;
  maxPages: number;
}): Buffer {
  const b = Buffer.alloc(64);
  b.writeUInt32LE(FUSE_KERNEL_VERSION, 0);
  b.writeUInt32LE(o.minor, 4);
  b.writeUInt32LE(o.maxReadahead, 8);
  b.writeUInt32LE(o.flags >>> 0, 12);
  b.writeUInt16LE(o.maxBackground, 16);
  b.writeUInt16LE(Math.floor((o.maxBackground * 3) / 4), 18); // congestion_threshold
  b.writeUInt32LE(o.maxWrite, 20);
  b.writeUInt32LE(1, 24); // time_gran: 1 ns
  b.writeUInt16LE(o.maxPages, 28);
  return b;
}

/** The attributes of the one file (fuse_attr_out: 16 bytes of validity, then fuse_attr). */
export function attrOut(o: {
  ino: number;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  mtimeSec: number;
}): Buffer {
  const b = Buffer.alloc(104);
  b.writeBigUInt64LE(1n, 0); // attr_valid: 1 s
  const a = 16;
  b.writeBigUInt64LE(BigInt(o.ino), a);
  b.writeBigUInt64LE(BigInt(o.size), a + 8);
  b.writeBigUInt64LE(BigInt(Math.ceil(o.size / 512)), a + 16); // blocks
  for (const at of [24, 32, 40]) b.writeBigUInt64LE(BigInt(o.mtimeSec), a + at); // atime, mtime, ctime
  b.writeUInt32LE(o.mode, a + 60);
  b.writeUInt32LE(1, a + 64); // nlink
  b.writeUInt32LE(o.uid, a + 68);
  b.writeUInt32LE(o.gid, a + 72);
  b.writeUInt32LE(1 << 20, a + 80); // blksize: the largest request (see MAX_IO in file-server.ts)
  return b;
}

/** fuse_open_out. */
export function openOut(fh: number, openFlags: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(BigInt(fh), 0);
  b.writeUInt32LE(openFlags, 8);
  return b;
}

/** fuse_write_out. */
export function writeOut(size: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeUInt32LE(size, 0);
  return b;
}

/** fuse_statfs_out (struct fuse_kstatfs) for a file of `size` bytes. */
export function statfsOut(size: number): Buffer {
  const b = Buffer.alloc(80);
  b.writeBigUInt64LE(BigInt(Math.ceil(size / 4096)), 0); // blocks
  b.writeUInt32LE(4096, 40); // bsize
  b.writeUInt32LE(255, 44); // namelen
  b.writeUInt32LE(4096, 48); // frsize
  return b;
}

/** fuse_read_in / fuse_write_in: offset and size (same place in both). */
export function parseIo(body: Buffer): { offset: number; size: number } {
  return { offset: Number(body.readBigUInt64LE(8)), size: body.readUInt32LE(16) };
}

/** fuse_setattr_in: which attributes change, and the new size. */
export function parseSetattr(body: Buffer): { valid: number; size: number } {
  return { valid: body.readUInt32LE(0), size: Number(body.readBigUInt64LE(16)) };
}

/** fuse_fallocate_in. */
export function parseFallocate(body: Buffer): { offset: number; length: number; mode: number } {
  return {
    offset: Number(body.readBigUInt64LE(8)),
    length: Number(body.readBigUInt64LE(16)),
    mode: body.readUInt32LE(24),
  };
}
