/**
 * How far into its allocation an I/O buffer starts. A large allocation starts on a page boundary,
 * and on CPUs whose `rep movsb` is slow when source and destination sit at the same offset in their
 * pages (this machine's AMD EPYC), the kernel's copy into such a buffer costs twice the CPU: a
 * socket read of 4 GiB into a page-aligned buffer took 1.7–1.9 s of CPU, 64 bytes in 0.8–1.0 s, and
 * a pread of cached pages ran at a third of the speed. 64 keeps cache-line alignment.
 */
export const IO_BUFFER_LEAD = 64;

/** A payload with at least this much still to come is read from the socket straight into its own buffer. */
export const DIRECT_READ_MIN = 16 * 1024;

/** A buffer the kernel copies into (socket reads, preads), starting IO_BUFFER_LEAD into its memory. */
export function ioBuffer(size: number): Buffer {
  return Buffer.allocUnsafeSlow(size + IO_BUFFER_LEAD).subarray(IO_BUFFER_LEAD);
}

/** Whether `buf` is a whole buffer from ioBuffer (not a view of part of one). */
export function isWholeIoBuffer(buf: Buffer): boolean {
  return buf.byteOffset === IO_BUFFER_LEAD && buf.buffer.byteLength === buf.length + IO_BUFFER_LEAD;
}
