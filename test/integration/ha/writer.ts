import { open } from 'node:fs/promises';

export const BLOCK = 4096;

/** Block `i` of the test file: its index spelled out over the whole block, so a torn or lost block shows. */
export function blockOf(i: number): Buffer {
  return Buffer.from(`block ${String(i).padStart(8, '0')} `.repeat(Math.ceil(BLOCK / 15)).slice(0, BLOCK));
}

/**
 * An application on the mounted volume: writes block after block to one file, each made durable
 * (fdatasync) before the next; `acked` counts the blocks the filesystem acknowledged. Any error is
 * recorded (the tests expect none: a failover is a pause, not an error).
 */
export class DurableWriter {
  acked = 0;
  readonly errors: string[] = [];
  private stopped = false;
  private done: Promise<void> = Promise.resolve();

  constructor(private readonly file: string) {}

  start(): void {
    this.done = (async () => {
      const fh = await open(this.file, 'w');
      try {
        for (let i = 0; !this.stopped; i++) {
          try {
            await fh.write(blockOf(i), 0, BLOCK, i * BLOCK);
            await fh.datasync();
            this.acked = i + 1;
          } catch (err) {
            this.errors.push(`block ${i}: ${(err as Error).message}`);
            return;
          }
        }
      } finally {
        await fh.close();
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.done;
  }

  /** Every acknowledged block reads back exactly; returns how many were checked. */
  async verify(): Promise<{ checked: number; bad: number[] }> {
    const fh = await open(this.file, 'r');
    try {
      const bad: number[] = [];
      const buf = Buffer.alloc(BLOCK);
      for (let i = 0; i < this.acked; i++) {
        const { bytesRead } = await fh.read(buf, 0, BLOCK, i * BLOCK);
        if (bytesRead !== BLOCK || !buf.equals(blockOf(i))) bad.push(i);
      }
      return { checked: this.acked, bad };
    } finally {
      await fh.close();
    }
  }
}
