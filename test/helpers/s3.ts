import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isAddressInUse, unusedPort } from './ports.js';
import { failIfExited, waitFor } from './wait.js';

const S3RVER = fileURLToPath(new URL('../../node_modules/s3rver/bin/s3rver.js', import.meta.url));

/** s3rver accepts only this key pair (it checks the access key id, not the signature). */
export const S3RVER_KEYS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

/** An S3 server (npm s3rver) on a free 127.0.0.1 port with its data in `dir`; stopped by PID. */
export class S3Server {
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly dataDir: string,
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  static async start(dir: string, buckets: string[] = []): Promise<S3Server> {
    const dataDir = join(dir, 's3rver-data');
    await mkdir(dataDir, { recursive: true });
    for (let attempt = 1; ; attempt++) {
      const port = await unusedPort();
      const args = [S3RVER, '-d', dataDir, '-a', '127.0.0.1', '-p', String(port), '--silent'];
      for (const b of buckets) args.push('--configure-bucket', b);
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (d) => {
        stderr += d;
      });
      const server = new S3Server(child, port, dataDir);
      // A request to a port some other process holds may hang: the exit ends it too.
      const exited = once(child, 'exit').then(() => undefined);
      try {
        await waitFor(
          async () => {
            await failIfExited(child, 's3rver', () => stderr);
            const res = await Promise.race([
              fetch(`${server.endpoint}/`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined),
              exited,
            ]);
            await failIfExited(child, 's3rver', () => stderr);
            return res !== undefined;
          },
          { what: 's3rver to answer', timeoutMs: 15_000 },
        );
        return server;
      } catch (e) {
        await server.stop();
        if (attempt >= 5 || !isAddressInUse(stderr)) throw e;
      }
    }
  }

  /** Create a bucket (s3rver accepts an anonymous PUT /bucket). */
  async createBucket(name: string): Promise<void> {
    const res = await fetch(`${this.endpoint}/${name}`, { method: 'PUT' });
    if (!res.ok) throw new Error(`create bucket ${name}: HTTP ${res.status}`);
  }

  /** Object content as stored by s3rver, or undefined. */
  async readObject(bucket: string, key: string): Promise<string | undefined> {
    return readFile(join(this.dataDir, bucket, `${key}._S3rver_object`), 'utf8').catch(() => undefined);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, 'exit');
    this.child.kill('SIGTERM');
    await exited;
  }
}
