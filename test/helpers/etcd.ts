import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isAddressInUse, unusedPort } from './ports.js';
import { failIfExited, waitFor } from './wait.js';

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
  /** SIGTERM only; `resume()` starts it again on the same data dir and ports. */
  halt(): Promise<void>;
  resume(): Promise<void>;
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

/**
 * A loopback port nothing listens on, for "unreachable endpoint" tests. Not a free port picked at
 * run time: on a shared machine another test's server may take that one a moment later.
 */
export const DEAD_PORT = 1;

export interface EtcdTlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/**
 * With `tls`, clients must use https and present a certificate signed by `tls.ca`; with
 * `quotaBytes`, etcd raises its NOSPACE alarm (and refuses writes) once its database is that large.
 */
export async function startEtcd(
  options: { tls?: EtcdTlsFiles; quotaBytes?: number } = {},
): Promise<EtcdServer> {
  const bin = findEtcdBinary();
  const tls = options.tls;
  const dir = mkdtempSync(join(tmpdir(), 'storctl-etcd-'));
  let child: ChildProcess;
  let log = '';
  let clientUrl = '';
  let args: string[] = [];

  const choosePorts = async () => {
    const [client, peer, metrics] = [await unusedPort(), await unusedPort(), await unusedPort()];
    clientUrl = `${tls ? 'https' : 'http'}://127.0.0.1:${client}`;
    const peerUrl = `http://127.0.0.1:${peer}`;
    args = [
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
      ...(options.quotaBytes ? [`--quota-backend-bytes=${options.quotaBytes}`] : []),
      ...(tls
        ? [
            `--cert-file=${tls.cert}`,
            `--key-file=${tls.key}`,
            `--trusted-ca-file=${tls.ca}`,
            '--client-cert-auth',
          ]
        : []),
    ];
  };

  const launch = async () => {
    log = '';
    child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d) => {
      log = (log + d).slice(-4000);
    });
    // A health request to a port some other process holds may hang: the exit ends it too.
    const exited = once(child, 'exit').then(() => '');
    await waitFor(
      async () => {
        await failIfExited(child, 'etcd', () => log);
        const body = await Promise.race([health(clientUrl, tls), exited]);
        await failIfExited(child, 'etcd', () => log);
        return body.includes('"health":"true"');
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

  // Restarts keep their ports (clients hold the URL); only the first start may move to new ones.
  for (let attempt = 1; ; attempt++) {
    await choosePorts();
    try {
      await launch();
      break;
    } catch (e) {
      // An etcd that exited failed the wait at once (a port collision costs no timeout); one that
      // never became healthy is stopped here, so nothing is left running.
      await terminate();
      if (attempt >= 5 || !isAddressInUse(log)) {
        rmSync(dir, { recursive: true, force: true });
        throw e;
      }
      rmSync(join(dir, 'data'), { recursive: true, force: true });
    }
  }
  return {
    url: clientUrl.replace(/^https?/, tls ? 'etcd+https' : 'etcd'),
    clientUrl,
    dataDir: dir,
    get pid() {
      return child.pid!;
    },
    async restart() {
      await terminate();
      await launch();
    },
    halt: terminate,
    resume: launch,
    async stop() {
      await terminate();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function health(clientUrl: string, tls: EtcdTlsFiles | undefined): Promise<string> {
  if (!tls) return (await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(2000) })).text();
  return new Promise((resolve, reject) => {
    const req = httpsGet(
      `${clientUrl}/health`,
      { ca: readFileSync(tls.ca), cert: readFileSync(tls.cert), key: readFileSync(tls.key) },
      (res) => {
        let body = '';
        res.on('data', (d) => {
          body += d;
        });
        res.on('end', () => resolve(body));
      },
    );
    req.setTimeout(2000, () => req.destroy(new Error('etcd /health timed out')));
    req.on('error', reject);
  });
}

/** A real etcd cluster of several members on loopback ports, as production runs etcd. */
export interface EtcdCluster {
  /** `etcd://h:p,h:p,…` of every member. */
  readonly url: string;
  readonly members: { name: string; pid: number; clientUrl: string }[];
  /** SIGTERM every member and remove the temp dir. */
  stop(): Promise<void>;
}

/** `size` etcd members (Debian's etcd-server) forming one cluster, data in a temp dir. */
export async function startEtcdCluster(size = 3): Promise<EtcdCluster> {
  const bin = findEtcdBinary();
  const dir = mkdtempSync(join(tmpdir(), 'storctl-etcd-cluster-'));
  const ports: { client: number; peer: number }[] = [];
  for (let i = 0; i < size; i++) ports.push({ client: await unusedPort(), peer: await unusedPort() });
  const names = ports.map((_, i) => `m${i + 1}`);
  const initial = ports.map((p, i) => `${names[i]}=http://127.0.0.1:${p.peer}`).join(',');
  const children = ports.map((p, i) =>
    spawn(
      bin,
      [
        `--name=${names[i]}`,
        `--data-dir=${join(dir, names[i])}`,
        '--logger=zap',
        '--log-level=error',
        `--listen-client-urls=http://127.0.0.1:${p.client}`,
        `--advertise-client-urls=http://127.0.0.1:${p.client}`,
        `--listen-peer-urls=http://127.0.0.1:${p.peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${p.peer}`,
        `--initial-cluster=${initial}`,
        '--initial-cluster-state=new',
        `--initial-cluster-token=${dir}`,
      ],
      { stdio: 'ignore' },
    ),
  );
  const members = children.map((c, i) => ({
    name: names[i],
    pid: c.pid!,
    clientUrl: `http://127.0.0.1:${ports[i].client}`,
  }));
  const stop = async () => {
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      process.kill(c.pid!, 'SIGCONT'); // a test may have frozen it
      const exited = once(c, 'exit');
      process.kill(c.pid!, 'SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const m of members)
      await waitFor(
        async () => {
          for (const c of children) await failIfExited(c, 'etcd member', () => '');
          return (await health(m.clientUrl, undefined).catch(() => '')).includes('"health":"true"');
        },
        { timeoutMs: 30_000, intervalMs: 50, what: `etcd member ${m.name} healthy` },
      );
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `etcd://${members.map((m) => m.clientUrl.slice('http://'.length)).join(',')}`,
    members,
    stop,
  };
}
