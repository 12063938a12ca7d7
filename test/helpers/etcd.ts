import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { waitFor } from './wait.js';

/**
 * A real single-node etcd (Debian's etcd-server) on free loopback ports, data in a temp dir.
 * A missing etcd binary throws: the etcd-backed suites must fail, never skip.
 */
export interface EtcdServer {
  /** `etcd://127.0.0.1:PORT` for openStore / --store. */
  readonly url: string;
  /** `http://127.0.0.1:PORT`. */
  readonly clientUrl: string;
  readonly dataDir: string;
  readonly pid: number;
  /** SIGTERM and start again on the same data dir and ports (clients see a connection drop). */
  restart(): Promise<void>;
  /** Stop by PID and remove the temp dir. */
  stop(): Promise<void>;
}

export function findEtcdBinary(): string {
  const candidates = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/bin'].map((d) =>
    join(d, 'etcd'),
  );
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {
      // try the next one
    }
  }
  throw new Error('etcd binary not found: install Debian package etcd-server (listed in .ci/apt-packages)');
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

export async function startEtcd(): Promise<EtcdServer> {
  const bin = findEtcdBinary();
  const dir = mkdtempSync(join(tmpdir(), 'storctl-etcd-'));
  const [client, peer, metrics] = [await freePort(), await freePort(), await freePort()];
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  const args = [
    '--name=test',
    `--data-dir=${join(dir, 'data')}`,
    '--logger=zap',
    '--log-level=error',
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=test=${peerUrl}`,
    '--initial-cluster-state=new',
    `--listen-metrics-urls=http://127.0.0.1:${metrics}`,
    '--heartbeat-interval=10',
    '--election-timeout=100',
  ];
  let child: ChildProcess;
  let log = '';

  const launch = async () => {
    child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d) => {
      log = (log + d).slice(-4000);
    });
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`etcd exited with ${child.exitCode}: ${log}`);
        const res = await fetch(`${clientUrl}/health`);
        const body = (await res.json()) as { health?: string };
        return body.health === 'true';
      },
      { timeoutMs: 20_000, intervalMs: 20, what: `etcd /health on ${clientUrl}` },
    );
  };

  const terminate = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit');
      process.kill(child.pid!, 'SIGTERM');
      await exited;
    }
  };

  await launch();
  return {
    url: `etcd://127.0.0.1:${client}`,
    clientUrl,
    dataDir: dir,
    get pid() {
      return child.pid!;
    },
    async restart() {
      await terminate();
      await launch();
    },
    async stop() {
      await terminate();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
