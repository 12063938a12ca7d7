import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * A loopback port for a server that is told its port up front (etcd, s3rver, nbdkit, qemu).
 *
 * Not `listen(0)`: that hands out a port from the kernel's ephemeral range, which the next outgoing
 * connection of any process may take as its local port before our server binds it (CI lost an
 * etcd start to "address already in use" that way). Ports below the ephemeral range are never
 * picked by the kernel, so only another test choosing the same random port can collide; servers
 * started with these ports retry on a new one when their bind fails.
 */
export async function unusedPort(): Promise<number> {
  const [ephemeralLow] = ephemeralRange();
  const low = 10_000;
  const high = Math.max(low + 1000, ephemeralLow) - 1;
  for (let attempt = 0; ; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low + 1));
    if (await canBind(port)) return port;
    if (attempt > 200) throw new Error(`no free loopback port found in ${low}-${high}`);
  }
}

/** True when the failure text is a bind collision, the one start failure a new port cures. */
export function isAddressInUse(text: string): boolean {
  return /address already in use|EADDRINUSE/i.test(text);
}

function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (lo && hi) return [lo, hi];
  } catch {
    // not Linux: fall through to the IANA range
  }
  return [49152, 65535];
}

async function canBind(port: number): Promise<boolean> {
  const server = createServer();
  server.listen(port, '127.0.0.1');
  try {
    await Promise.race([once(server, 'listening'), once(server, 'error').then(([e]) => Promise.reject(e))]);
  } catch {
    return false;
  }
  server.close();
  await once(server, 'close');
  return true;
}

/**
 * Start a server told its ports up front on `count` ports from `unusedPort()`; while the start fails
 * with a bind collision (its error text says "address already in use", as the tail of a server log
 * in a FatalWaitError does), start it again on new ports, at most `attempts` times. `start` must
 * leave nothing running when it throws.
 */
export async function withUnusedPorts<T>(
  count: number,
  start: (ports: number[]) => Promise<T>,
  attempts = 5,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const ports: number[] = [];
    while (ports.length < count) {
      const p = await unusedPort();
      if (!ports.includes(p)) ports.push(p);
    }
    try {
      return await start(ports);
    } catch (e) {
      if (attempt >= attempts || !isAddressInUse(String(e))) throw e;
    }
  }
}
