import { Errno } from './protocol.js';

/**
 * What an NBD export serves: a fixed-size range of bytes. Implementations: a file (replica), a
 * mirror over several backends (nexus), a remote NBD export (NbdClient).
 */
export interface BlockBackend {
  /** Size in bytes. */
  readonly size: number;
  readonly readOnly?: boolean;
  /**
   * A remote backend whose connection is gone: its I/O failed for that, not on the far side's disk,
   * and what it holds may serve again once reached (its io-engine restarting).
   */
  readonly connectionLost?: boolean;
  /**
   * Fill `buf` completely with the bytes at `offset`. A backend whose bytes arrive in pieces (a
   * remote export) may call `progress(filled)` as they do, `buf[0, filled)` being final, so a server
   * can start the reply before the last byte is in.
   */
  read(buf: Buffer, offset: number, progress?: ReadProgress): Promise<void>;
  /** Write all of `buf` at `offset`; with `fua` the bytes are durable when the promise resolves. */
  write(buf: Buffer, offset: number, fua: boolean): Promise<void>;
  flush(): Promise<void>;
  /** Advisory discard: afterwards the range may read as anything, but reads stay consistent. */
  trim(offset: number, length: number): Promise<void>;
  /** Afterwards the range reads as zeroes. */
  writeZeroes(offset: number, length: number, fua: boolean): Promise<void>;
}

/** How much of a read's buffer is filled so far, from its start. */
export type ReadProgress = (filled: number) => void;

/** An I/O error with the errno an NBD reply carries. */
export class BlockIoError extends Error {
  constructor(
    message: string,
    readonly errno: number = Errno.EIO,
  ) {
    super(message);
    this.name = 'BlockIoError';
  }
}

/**
 * The errno a backend's failure answers on the wire. EPERM there means the request was refused (a
 * read-only export, a replica reserved by a newer nexus: io-engine/reservation.ts), so a backing
 * filesystem gone read-only under an open file (its disk failed and ext4 aborted its journal) is
 * EIO, a failed disk: as EPERM, a nexus took it for a reservation conflict and shut itself down.
 */
export function errnoOf(err: unknown): number {
  if (err instanceof BlockIoError) return err.errno;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC') return Errno.ENOSPC;
  if (code === 'EINVAL') return Errno.EINVAL;
  if (code === 'EPERM' || code === 'EACCES') return Errno.EPERM;
  return Errno.EIO;
}

/** Shared zero buffer for WRITE_ZEROES emulation (never written to). */
export const ZERO_CHUNK = Buffer.alloc(1024 * 1024);

/** Check that [offset, offset+length) lies inside a device of `size` bytes. */
export function checkRange(size: number, offset: number, length: number): void {
  if (offset < 0 || length < 0 || offset + length > size) {
    throw new BlockIoError(`range ${offset}+${length} outside device of ${size} bytes`, Errno.ENOSPC);
  }
}
