import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isSameProcessAlive } from '../../../src/lib/mount/processes.js';
import { startEtcd } from '../../helpers/etcd.js';
import { runStorctl, StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { UpHome } from './up-fixture.js';

/** `storctl up --roles`: a subset of the roles, each name and dependency checked before anything starts. */
describe('storctl up --roles (built CLI)', () => {
  const cluster = new UpHome();
  let up: StorctlProcess | undefined;

  afterAll(async () => {
    await up?.kill('SIGINT');
    rmSync(cluster.home, { recursive: true, force: true });
  });

  it('refuses an unknown role or a missing dependency with exit 2, starting nothing', async () => {
    const unknown = await runStorctl(['up', '--roles', 'core,io-engin'], { env: cluster.env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown role 'io-engin' (did you mean io-engine?)");
    expect(unknown.stderr).toContain(
      'the roles are io-engine, core, csi-controller, csi-node, ha-cluster, ha-node, mounter',
    );
    const missing = await runStorctl(['up', '--roles', 'io-engine,csi-controller'], { env: cluster.env });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("csi-controller needs core (it serves CSI through core's REST API)");
    expect(missing.stderr).toContain('Try: storctl up --roles io-engine,csi-controller,core');
    const haNode = await runStorctl(['up', '--roles', 'core,csi-node,ha-node'], { env: cluster.env });
    expect(haNode.code).toBe(2);
    expect(haNode.stderr).toContain('ha-node needs ha-cluster');
    const empty = await runStorctl(['up', '--roles', ','], { env: cluster.env });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain('--roles names no role');
    // Nothing was started: no data dir, no endpoints file.
    expect(existsSync(join(cluster.home, 'storctl', 'endpoints.json'))).toBe(false);
  });

  it('a REST address in use: up says so and which flag moves it, and leaves nothing running', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    const other = new UpHome();
    try {
      const r = await runStorctl(
        ['up', '--roles', 'core,io-engine', '--nodes', '1', '--rest', `127.0.0.1:${port}`],
        {
          env: other.env,
        },
      );
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(
        `core exited (code 4) before it was ready (cannot serve the REST API on 127.0.0.1:${port}: address already in use; try: pass another --rest HOST:PORT (port 0 picks a free one))`,
      );
      expect(existsSync(join(other.home, 'storctl', 'endpoints.json'))).toBe(false);
    } finally {
      busy.close();
      rmSync(other.home, { recursive: true, force: true });
    }
  });

  it('a store that does not answer: each start is said, then up ends with the reason and exit 5', async () => {
    const other = new UpHome();
    try {
      // Nothing listens on port 1; every role exits 5 (store unreachable) at once.
      const r = await runStorctl(
        ['up', '--roles', 'core,io-engine', '--nodes', '1', '--store', 'etcd://127.0.0.1:1'],
        { env: other.env },
      );
      // Before: with every role waiting out its retry, Node ended up at once, silently, with code 13.
      expect(r.code).toBe(5);
      expect(r.stderr).toMatch(
        /io-engine node-1 exited \(code 5\) before it was ready \(store etcd:\/\/127\.0\.0\.1:1 is unreachable: .*; starting it again in 1 s/,
      );
      expect(r.stderr).toContain('; starting it again in 2 s');
      expect(r.stderr).toMatch(
        /Error: io-engine node-1 exited \(code 5\) before it was ready \(store etcd:\/\/127\.0\.0\.1:1 is unreachable/,
      );
      expect(existsSync(join(other.home, 'storctl', 'endpoints.json'))).toBe(false);
    } finally {
      rmSync(other.home, { recursive: true, force: true });
    }
  });

  it("pools declared larger than the data dir's filesystem: up warns that volumes can fill it, store and logs with them", async () => {
    const other = new UpHome();
    const dataDir = join(other.home, 'storctl');
    mkdirSync(dataDir);
    // A 64 MiB disk of our own under the data dir; the pool is declared 1 GiB.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'storctl-up-small-disk', dataDir]);
    let small: StorctlProcess | undefined;
    try {
      small = await other.start(['--roles', 'core,io-engine', '--nodes', '1']);
      expect(small.output).toContain(
        `warning: the pools declare 1 × 1GiB, more than the filesystem holding ${dataDir} (64MiB); thin volumes can fill it, and the embedded store and the logs there then stop taking writes: pass a smaller --pool-capacity or a --data-dir on a larger disk`,
      );
    } finally {
      await small?.kill('SIGINT');
      execFileSync('umount', [dataDir]);
      rmSync(other.home, { recursive: true, force: true });
    }
  });

  it('runs only core and one io-engine, says which, and commands find it', async () => {
    up = await cluster.start(['--roles', 'core,io-engine', '--nodes', '1']);
    expect(up.output).toMatch(/^roles {10}core,io-engine \(--roles\)$/m);
    expect(up.output).toMatch(/^csi-controller <none> \(not in --roles\)$/m);
    expect(up.output).toMatch(/^ha-cluster {5}<none> \(not in --roles\)$/m);
    expect(up.output).toMatch(/^mounter {8}<none> \(not in --roles\)$/m);
    // Its first hint fits one node: three replicas would not be placed.
    expect(up.output).toContain('ready:         try `storctl volume create --size 1Gi --replicas 1`');
    // The defaults lead commands to this cluster: no environment to export.
    expect(up.output).not.toContain('commands find this cluster');
    // A second `up` on the data dir is refused before it starts (or says it starts) anything.
    const second = await runStorctl(['up', '--roles', 'core,io-engine', '--nodes', '1'], {
      env: cluster.env,
    });
    expect(second.code).toBe(4);
    expect(second.stderr).toMatch(/^Error: a cluster started by `storctl up` \(pid \d+\) already runs in /);
    expect(second.stderr).not.toContain('starting');
    const endpoints = cluster.endpoints();
    expect(Object.keys(endpoints.roles).sort()).toEqual(['core', 'io-engine node-1']);
    expect(endpoints.csiControllerSocket).toBeNull();
    expect(endpoints.haCluster).toBeNull();
    const nodes = await runStorctl(['get', 'nodes', '--no-headers'], { env: cluster.env });
    expect(nodes.code).toBe(0);
    expect(nodes.stdout).toMatch(/^\s*node-1\s/);
    expect(nodes.stdout.trim().split('\n')).toHaveLength(1);
    const pools = await runStorctl(['get', 'pools', '-o', 'jsonpath={.items[*].id}'], { env: cluster.env });
    expect(pools.stdout.trim()).toBe('pool-node-1');
    // A command that changes an object prints it through the same templates (core's {spec, state}).
    const created = await runStorctl(
      ['volume', 'create', '--size', '16Mi', '--replicas', '1', '-o', 'jsonpath={.spec.uuid} {.spec.size}'],
      { env: cluster.env },
    );
    expect(created.stderr).toBe('');
    expect(created.stdout).toMatch(/^[0-9a-f-]{36} 16777216\n$/);
    const [uuid] = created.stdout.split(' ');
    const listed = await runStorctl(
      ['get', 'volumes', '-o', 'custom-columns=ID:.spec.uuid,REPLICAS:.spec.num_replicas'],
      {
        env: cluster.env,
      },
    );
    expect(listed.stdout.split('\n').slice(0, 2)).toEqual([`ID${' '.repeat(37)}REPLICAS`, `${uuid}   1`]);
    // A closed terminal (SIGHUP) stops the cluster as Ctrl-C does: no role is left running.
    const stopped = up;
    up = undefined;
    expect(await stopped.kill('SIGHUP')).toBe(0);
    expect(stopped.output).toContain('stopped');
    for (const pid of Object.values(endpoints.roles as Record<string, number>))
      expect(await isSameProcessAlive(pid), `role pid ${pid}`).toBe(false);
  }, 90_000);

  it('moved off the defaults by its flags (etcd, a cluster id), is found by commands given its data dir alone', async () => {
    const other = new UpHome();
    const dataDir = join(other.home, 'elsewhere');
    const etcd = await startEtcd();
    try {
      up = await other.start([
        '--roles',
        'core,io-engine',
        '--nodes',
        '1',
        '--data-dir',
        dataDir,
        '--store',
        etcd.url,
        '--cluster-id',
        'c1',
      ]);
      // endpoints.json names the store and the cluster id: the data dir is all a command needs.
      // (That line comes after the ready line `start` waits for, maybe in a later chunk.)
      const started = up;
      await waitFor(
        () =>
          started.output.includes(`commands find this cluster with: export STORCTL_DATA_DIR=${dataDir}\n`),
        {
          what: 'the line naming the data dir',
        },
      );
      // Without it a command finds no store at the default place, and says so (it makes none there).
      const lost = await runStorctl(['get', 'nodes'], { env: other.env });
      expect(lost.code).toBe(5);
      expect(lost.stderr).toContain(`there is no store file ${join(other.home, 'storctl', 'store.db')}`);
      expect(lost.stderr).toContain('Try: start a cluster with `storctl up`');
      expect(existsSync(join(other.home, 'storctl'))).toBe(false);
      const found = await runStorctl(['get', 'nodes', '--no-headers'], {
        env: { ...other.env, STORCTL_DATA_DIR: dataDir },
      });
      expect(found.stderr).toBe('');
      expect(found.stdout).toMatch(/^\s*node-1\s/);
      const stopped = up;
      up = undefined;
      expect(await stopped.kill('SIGINT')).toBe(0);
    } finally {
      // Before etcd: stopped without its store, up's roles would each wait out their grace.
      await up?.kill('SIGINT');
      up = undefined;
      await etcd.stop();
      rmSync(other.home, { recursive: true, force: true });
    }
  }, 90_000);

  it('a signal while a role is still starting stops what started, at once', async () => {
    // A second up on the first one's store: its core waits for the lease the first core holds.
    const first = new UpHome();
    const second = new UpHome();
    let waiting: StorctlProcess | undefined;
    try {
      up = await first.start(['--roles', 'core', '--lease-ttl', '3600']);
      const store = first.endpoints().store as string;
      waiting = new StorctlProcess(
        ['up', '--roles', 'core', '--rest', '127.0.0.1:0', '--store', store],
        second.env,
      );
      const coreLog = join(second.home, 'storctl', 'logs', 'core.log');
      await waitFor(
        async () =>
          (existsSync(coreLog) && readFileSync(coreLog, 'utf8').includes('another core holds the lease')) ||
          (await waiting!.failIfExited('the second storctl up')),
        { what: "the second up's core waiting for the lease", timeoutMs: 30_000 },
      );
      const corePid = Number(
        /"pid":(\d+)[^\n]*another core holds the lease/.exec(readFileSync(coreLog, 'utf8'))![1],
      );
      // Stopped while its core still waits (before, up went on waiting for core, deaf to signals).
      const exited = waiting.kill('SIGINT');
      await waitFor(async () => !waiting!.running, { what: 'the second up stopped', timeoutMs: 20_000 });
      expect(await exited).toBe(0);
      // It said why it was waiting, and then that it stopped.
      // Which core holds it, and when that lease ends unless renewed.
      expect(waiting.output).toMatch(
        /core: waiting for the store lease, which core \S+-\d+ holds \(its lease ends in \d+ s unless that core renews it\): another `storctl up` or `daemon core` on this store/,
      );
      expect(waiting.output).toContain('stopped while starting: core was not ready yet');
      waiting = undefined;
      expect(await isSameProcessAlive(corePid)).toBe(false);
      const stopped = up;
      up = undefined;
      expect(await stopped.kill('SIGINT')).toBe(0);
    } finally {
      await waiting?.kill('SIGKILL');
      rmSync(first.home, { recursive: true, force: true });
      rmSync(second.home, { recursive: true, force: true });
    }
  }, 90_000);
});
