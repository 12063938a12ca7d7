import { createWriteStream, type WriteStream } from 'node:fs';

/** How long after a failed write the file is tried again. */
const RETRY_MS = 5_000;

/**
 * A role's log file, appended to. A write that fails (the disk is full, a quota, an I/O error) must
 * not end `up`, whose exit stops every role, the data path with them: the role's lines are dropped
 * instead, `up` says so once, and the file is tried again every few seconds. When it takes writes
 * again, a line in it says how much output was lost and why.
 */
export class RoleLog {
  private stream: WriteStream | null = null;
  /** Set while writes fail: why, and when the file was last tried. */
  private failure: { reason: string; at: number } | null = null;
  /** Bytes of output that did not reach the file since that was last said in it. */
  private lostBytes = 0;
  private ended = false;

  constructor(
    readonly file: string,
    private readonly say: (line: string) => void,
    private readonly retryMs = RETRY_MS,
  ) {
    this.stream = this.open();
  }

  write(data: Buffer | string): void {
    if (this.ended) return;
    if (!this.stream && Date.now() - this.failure!.at >= this.retryMs) this.reopen();
    const length = data.length;
    if (!this.stream) this.lostBytes += length;
    else
      this.stream.write(data, (err) => {
        if (err) this.lostBytes += length;
      });
  }

  /** Resolves once every write queued so far is in the file (at once when writes fail). */
  flushed(): Promise<void> {
    const stream = this.stream;
    if (!stream || stream.writableEnded) return Promise.resolve();
    return new Promise((resolve) => stream.write('', () => resolve()));
  }

  /** Resolves once the file is closed. */
  end(): Promise<void> {
    this.ended = true;
    const stream = this.stream;
    if (!stream || stream.closed) return Promise.resolve();
    return new Promise((resolve) => stream.end(() => stream.close(() => resolve())));
  }

  private open(): WriteStream {
    const stream = createWriteStream(this.file, { flags: 'a', mode: 0o600 });
    stream.on('error', (err) => this.failed(stream, err));
    return stream;
  }

  private failed(stream: WriteStream, err: Error): void {
    if (stream !== this.stream) return;
    this.stream = null;
    stream.destroy(); // writes still queued fail (their callbacks count them as lost)
    const known = this.failure !== null;
    this.failure = { reason: err.message.split(', ')[0], at: Date.now() }; // "ENOSPC: no space left on device, write"
    if (!known)
      this.say(
        `cannot write the log ${this.file} (${this.failure.reason}): its output is dropped until the file takes writes again (tried every ${this.retryMs / 1000}s); the role runs on`,
      );
  }

  /** Try the file again: its first line says what was lost; once that is written, `up` says so too. */
  private reopen(): void {
    const { reason } = this.failure!;
    const lost = this.lostBytes;
    const stream = this.open();
    this.stream = stream;
    const line = {
      level: 40,
      time: new Date().toISOString(),
      component: 'up',
      msg: 'output lost: this log could not be written',
      lost_bytes: lost,
      err: reason,
    };
    // Output from now on queues behind this line; should the file fail again, it counts as lost.
    stream.write(`${JSON.stringify(line)}\n`, (err) => {
      if (err || stream !== this.stream) return;
      this.failure = null;
      this.lostBytes -= lost;
      this.say(`the log ${this.file} takes writes again (${lost} bytes of output were lost)`);
    });
  }
}
