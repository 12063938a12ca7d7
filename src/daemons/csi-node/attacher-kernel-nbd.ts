import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { AttachedDevice, Attacher } from './attacher.js';
import { run } from './exec.js';
import { PROXY_EXPORT, type ProxyRef } from './proxy.js';

/** The kernel NBD client is usable when its module is loaded (or built in). */
export const kernelNbdAvailable = () => existsSync('/sys/module/nbd');

async function nbdInUse(dev: string): Promise<boolean> {
  const name = basename(dev);
  if (existsSync(`/sys/block/${name}/pid`)) return true;
  const size = await readFile(`/sys/block/${name}/size`, 'utf8').catch(() => '0');
  return Number(size.trim()) > 0;
}

/**
 * The kernel NBD client (nbd-client, package nbd-client) connected to the proxy socket. Not
 * exercised on machines without the nbd module; the nbdfuse attacher is the tested path there.
 */
export class KernelNbdAttacher implements Attacher {
  readonly kind = 'kernel-nbd' as const;

  advertisedSize(size: number): number {
    return size;
  }

  async attach(o: { dir: string; proxy: ProxyRef; size: number }): Promise<AttachedDevice> {
    const devices = (await readdir('/sys/block'))
      .filter((n) => /^nbd\d+$/.test(n))
      .sort((a, b) => Number(a.slice(3)) - Number(b.slice(3)));
    for (const name of devices) {
      const device = `/dev/${name}`;
      if (await nbdInUse(device)) continue;
      try {
        await run(['nbd-client', '-u', o.proxy.socketPath, device, '-N', PROXY_EXPORT, '-b', '4096']);
        return { kind: this.kind, device };
      } catch (err) {
        // Taken by someone else between the check and the connect: try the next device.
        if (!(await nbdInUse(device))) throw err;
      }
    }
    throw new Error('no free /dev/nbdN device (load the nbd module with more nbds_max)');
  }

  async detach(d: AttachedDevice): Promise<void> {
    if (await nbdInUse(d.device)) await run(['nbd-client', '-d', d.device]);
  }

  async problem(d: AttachedDevice): Promise<string | undefined> {
    return (await nbdInUse(d.device)) ? undefined : `${d.device} is disconnected`;
  }

  async grow(d: AttachedDevice): Promise<void> {
    throw new Error(
      `${d.device}: the kernel NBD client learns the size at connect; growing it online needs a reconnect (not supported yet: unstage and stage again)`,
    );
  }
}
