import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IoEngineClient } from '../../../src/lib/io-engine/client.js';
import { loopsOf } from '../../../src/lib/mount/loop-devices.js';
import { procStat } from '../../../src/lib/mount/processes.js';
import { isMountPoint, unmountAll } from '../../../src/lib/mount/unmount.js';
import {
  type NexusInfo,
  type NexusSpec,
  nexusInfo,
  nexusSpec,
  replicaSpec,
  type SwitchOverSpec,
  switchOver,
} from '../../../src/lib/specs/index.js';
import { nexusInfoKey, objectKey, volumeNexusInfoPrefix } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import { managedReplicaSpec } from '../../helpers/specs.js';
import { runStorctl, STORCTL_BIN } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { coreFlags, newVolumeId, TestCluster } from '../core/cluster.js';
import { RecordedKubeApiFixture, recordedPv, recordedPvc } from './kube-fixture.js';

const MiB = 1 << 20;

/** Fast reconcilers, but core's own GC far away: the orphans made here must wait for the CLI. */
const CORE_FLAGS = coreFlags({ '--gc-period': '1h', '--replica-gc-grace': '1h' });

interface Row {
  kind: string;
  id: string;
  volume: string | null;
  node: string | null;
  reason: string;
  outcome?: { result: string; detail: string };
}

/**
 * Every orphan kind, each made on purpose on a real cluster (core + three io-engines as processes),
 * beside healthy resources that must survive: `storctl orphans -o json` lists exactly the orphans
 * with their reasons, and `orphans --delete -y` removes exactly those.
 */
describe.each(['embedded', 'etcd'] as const)(
  'storctl orphans (built CLI, real cluster, %s store)',
  (backend) => {
    let c: TestCluster;
    let dir: string;
    let kube: RecordedKubeApiFixture;
    let args: string[];
    const healthy = newVolumeId(); // published, 2 replicas; PV in Kubernetes; csi-node staged it
    const pending = newVolumeId(); // PVC (pending) but no PV yet: claimed
    const unclaimed = newVolumeId(); // neither PV nor PVC: volume-without-claim
    const missing = newVolumeId(); // a volume that does not exist, named by orphaned records
    const goneStaged = newVolumeId(); // csi-node still has it staged; no such volume
    const operatorReplica = crypto.randomUUID(); // unmanaged, made through REST: not an orphan
    const engineReplica = crypto.randomUUID(); // on io-engine node-2 without a spec
    const engineNexusChild = crypto.randomUUID(); // on io-engine node-1 without a spec
    const engineNexus = crypto.randomUUID(); // run by io-engine node-1 without a spec (its NexusInfo too)
    const ownerGoneReplica = crypto.randomUUID(); // managed, owner `missing`; real on node-3
    const ownerlessReplica = crypto.randomUUID(); // managed, no owner; spec only
    const ownerGoneNexus = crypto.randomUUID(); // owner `missing`, on node-4
    const sentinel = crypto.randomUUID(); // a Deleting replica spec core's first GC pass removes
    let healthyNexus = '';
    let csiState = '';
    let publishTarget = '';
    let proxyStandIn: ChildProcess | undefined;
    let goneFile = '';
    let csiRoot = '';
    const cli = (...more: string[]) => runStorctl([...args, ...more], { env: c.env });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'storctl-orphans-'));
      c = await TestCluster.start({ backend, coreFlags: CORE_FLAGS });
      // Healthy resources.
      await c.createPublished(healthy, { size: 16 * MiB, replicas: 2, node: 'node-1' });
      for (const id of [pending, unclaimed])
        await c.rest.createVolume(id, {
          size: 8 * MiB,
          replicas: 1,
          thin: true,
          policy: { self_heal: false },
        });
      await c.rest.call('PUT', `/pools/pool-node-3/replicas/${operatorReplica}`, {
        size: 4 * MiB,
        thin: true,
      });
      healthyNexus = (await c.rest.getVolume(healthy)).state.target!.uuid;
      const store = await openStore(c.storeUrl);
      try {
        await waitFor(
          async () => (await store.range(volumeNexusInfoPrefix(c.space, healthy))).kvs.length > 0,
          {
            what: "the healthy volume's NexusInfo",
          },
        );
      } finally {
        await store.close();
      }
      // A replica an io-engine holds with no spec.
      const node1 = new IoEngineClient(c.engine('node-1').grpc);
      const node2 = new IoEngineClient(c.engine('node-2').grpc);
      const node3 = new IoEngineClient(c.engine('node-3').grpc);
      try {
        // A nexus an io-engine runs without a spec (it writes its unowned NexusInfo `nexus/<id>/info`).
        await node1.createReplica({ uuid: engineNexusChild, pool: 'pool-node-1', size: 4 * MiB, thin: true });
        await node1.createNexus({
          uuid: engineNexus,
          size: 4 * MiB,
          children: [`bdev:///${engineNexusChild}?uuid=${engineNexusChild}`],
        });
        await node2.createReplica({ uuid: engineReplica, pool: 'pool-node-2', size: 4 * MiB, thin: true });
        await node3.createReplica({ uuid: ownerGoneReplica, pool: 'pool-node-3', size: 4 * MiB, thin: true });
      } finally {
        node1.close();
        node2.close();
        node3.close();
      }
      // Specs as a crash would leave them, written with core stopped (it reads the store at start).
      // Core's first reconcile pass runs its GC, which destroys a nexus whose volume is gone at once
      // when its io-engine is online: the orphaned nexus is on node-4, whose io-engine starts only
      // after that pass (a Deleting sentinel replica, which the same pass removes, shows it ran).
      await c.cores[0].kill('SIGTERM');
      await writeLeftovers(c);
      await c.startCore(CORE_FLAGS);
      const probe = await openStore(c.storeUrl);
      try {
        await waitFor(async () => !(await probe.get(objectKey(c.space, 'ReplicaSpec', sentinel))), {
          what: "core's first GC pass (the sentinel replica spec removed)",
          timeoutMs: 30_000,
        });
      } finally {
        await probe.close();
      }
      await c.startEngine('node-4');
      await waitFor(async () => (await c.rest.getNode('node-4')).state.status === 'Online', {
        what: 'node-4 online in core',
      });

      // csi-node's state: the healthy volume staged (kept), a deleted one staged (orphan).
      csiState = join(dir, 'csi-node');
      csiRoot = join(dir, 'kubelet');
      mkdirSync(csiState, { recursive: true });
      const entry = (volumeId: string) => {
        const staging = join(csiRoot, 'plugins', 'staging', volumeId);
        const own = join(csiState, 'volumes', volumeId);
        mkdirSync(staging, { recursive: true });
        mkdirSync(own, { recursive: true });
        return {
          volumeId,
          dir: own,
          stagingPath: staging,
          target: 'nbd://127.0.0.1:10809/none',
          block: false,
          fsType: 'ext4',
          mountFlags: [],
          accessMode: 'SINGLE_NODE_WRITER',
          size: 16 * MiB,
          staged: true,
          publishes: {},
          stagedAt: new Date().toISOString(),
        };
      };
      // The deleted volume's leftovers are real: a filesystem mounted at its staging path (tmpfs
      // standing in for the NBD-backed ext4), bind-mounted at a pod's publish target, and a live
      // process recorded as its proxy (pid and start time, as csi-node records them).
      const gone = entry(goneStaged);
      publishTarget = join(
        csiRoot,
        'pods',
        crypto.randomUUID(),
        'volumes',
        'kubernetes.io~csi',
        'pv',
        'mount',
      );
      mkdirSync(publishTarget, { recursive: true });
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'storctl-orphans-test', gone.stagingPath]);
      execFileSync('mount', ['--bind', gone.stagingPath, publishTarget]);
      proxyStandIn = spawn('sleep', ['600'], { stdio: 'ignore' });
      const started = await waitFor(() => procStat(proxyStandIn!.pid!), { what: 'proxy stand-in running' });
      // And a real loop device bound to the volume's file in its own dir (a plain file standing in
      // for the FUSE file the proxy served), as the fuse-loop attacher records it.
      goneFile = join(gone.dir, goneStaged);
      writeFileSync(goneFile, Buffer.alloc(MiB));
      const loop = execFileSync('losetup', ['-f', '--show', goneFile], { encoding: 'utf8' }).trim();
      const goneEntry = {
        ...gone,
        device: { kind: 'fuse-loop', device: loop, file: goneFile },
        publishes: { [publishTarget]: { readonly: false, block: false } },
        proxy: {
          pid: proxyStandIn.pid!,
          pidStartTime: started.startTime,
          socketPath: join(gone.dir, 'proxy.sock'),
          controlPath: join(gone.dir, 'proxy.ctl'),
          logFile: join(gone.dir, 'proxy.log'),
        },
      };
      writeFileSync(
        join(csiState, 'state.json'),
        `${JSON.stringify({ version: 1, volumes: { [healthy]: entry(healthy), [goneStaged]: goneEntry } }, null, 2)}\n`,
        { mode: 0o600 },
      );

      // Kubernetes: the healthy volume has a bound PV, `pending` a PVC only, `unclaimed` nothing.
      kube = new RecordedKubeApiFixture('fixture-token');
      await kube.start();
      const claimUid = crypto.randomUUID();
      kube.pvs = [recordedPv(healthy, { namespace: 'default', name: 'data', uid: claimUid })];
      kube.pvcs = [
        recordedPvc('default', 'data', claimUid, `pvc-${claimUid}`),
        recordedPvc('apps', 'pending-claim', pending),
      ];
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(kubeconfig, kube.kubeconfig(), { mode: 0o600 });
      args = [
        'orphans',
        '--kubeconfig',
        kubeconfig,
        '--csi-node-state',
        csiState,
        '--csi-node-root',
        csiRoot,
      ];
    }, 120_000);

    afterAll(async () => {
      // Whatever a failed test left: the test's own mounts and process only.
      if (publishTarget) await unmountAll(publishTarget).catch(() => {});
      await unmountAll(join(csiRoot, 'plugins', 'staging', goneStaged)).catch(() => {});
      if (proxyStandIn && proxyStandIn.exitCode === null && proxyStandIn.signalCode === null)
        proxyStandIn.kill('SIGKILL');
      if (goneFile) for (const loop of await loopsOf(goneFile)) execFileSync('losetup', ['-d', loop]);
      await kube?.stop();
      await c?.stop();
      rmSync(dir, { recursive: true, force: true });
    }, 120_000);

    async function writeLeftovers(cluster: TestCluster): Promise<void> {
      const store = await openStore(cluster.storeUrl);
      const space = cluster.space;
      const nexus: NexusSpec = {
        uuid: ownerGoneNexus,
        name: missing,
        node: 'node-4',
        children: [],
        size: 4 * MiB,
        spec_status: { Created: 'Online' },
        share: 'none',
        managed: true,
        owner: missing,
        operation: null,
        nvmf_config: null,
        status_info: { shutdown_failed: false },
        allowed_hosts: [],
      };
      const info: NexusInfo = { children: [{ healthy: true, uuid: ownerGoneReplica }], clean_shutdown: true };
      const sw = (volume: string, stage: SwitchOverSpec['operation'], at: Date): SwitchOverSpec => ({
        callback_uri: '127.0.0.1:50053',
        node_name: 'node-1',
        volume,
        operation: stage,
        timestamp: at.toISOString(),
        existing_nqn: `nqn.2019-05.io.openebs:${volume}`,
        new_path: null,
        retry_count: 0,
        reuse_existing: false,
        publish_context: null,
      });
      try {
        await store.put(
          objectKey(space, 'ReplicaSpec', sentinel),
          replicaSpec.encode({ ...managedReplicaSpec(sentinel, 'pool-node-1', null), status: 'Deleting' }),
        );
        for (const r of [
          managedReplicaSpec(ownerGoneReplica, 'pool-node-3', missing),
          managedReplicaSpec(ownerlessReplica, 'pool-node-1', null),
        ])
          await store.put(objectKey(space, 'ReplicaSpec', r.uuid), replicaSpec.encode(r));
        await store.put(objectKey(space, 'NexusSpec', nexus.uuid), nexusSpec.encode(nexus));
        await store.put(nexusInfoKey(space, ownerGoneNexus, missing), nexusInfo.encode(info));
        // A switchover of a deleted volume (in progress), and one of the healthy volume finished 2 h ago.
        await store.put(
          objectKey(space, 'SwitchOver', missing),
          switchOver.encode(sw(missing, { operation: 'ReplacePath', result: null }, new Date())),
        );
        await store.put(
          objectKey(space, 'SwitchOver', healthy),
          switchOver.encode(
            sw(healthy, { operation: 'Successful', result: true }, new Date(Date.now() - 7_200_000)),
          ),
        );
      } finally {
        await store.close();
      }
    }

    const expected = () => [
      {
        kind: 'replica',
        id: ownerGoneReplica,
        reason: new RegExp(`owned by volume ${missing}, which does not exist`),
      },
      { kind: 'replica', id: ownerlessReplica, reason: /managed replica with no owning volume/ },
      {
        kind: 'engine-replica',
        id: engineReplica,
        reason: /io-engine node-2 holds it in pool pool-node-2, but there is no ReplicaSpec/,
      },
      {
        kind: 'engine-replica',
        id: engineNexusChild,
        reason: /io-engine node-1 holds it in pool pool-node-1, but there is no ReplicaSpec/,
      },
      {
        kind: 'engine-nexus',
        id: engineNexus,
        reason: /io-engine node-1 runs it, but there is no NexusSpec/,
      },
      {
        kind: 'nexus-info',
        id: engineNexus,
        reason: new RegExp(`NexusInfo of nexus ${engineNexus}, which has no NexusSpec`),
      },
      {
        kind: 'nexus',
        id: ownerGoneNexus,
        reason: new RegExp(`owned by volume ${missing}, which does not exist`),
      },
      {
        kind: 'nexus-info',
        id: ownerGoneNexus,
        reason: new RegExp(`NexusInfo of volume ${missing}, which does not exist`),
      },
      { kind: 'switchover', id: missing, reason: new RegExp(`volume ${missing}, which does not exist`) },
      { kind: 'switchover', id: healthy, reason: /switchover Successful 2h ago, past the 10m grace/ },
      {
        kind: 'csi-node-volume',
        id: goneStaged,
        reason: new RegExp(`still has volume ${goneStaged}, which does not exist`),
      },
      {
        kind: 'volume-without-claim',
        id: unclaimed,
        reason: /no PersistentVolume and no PersistentVolumeClaim/,
      },
    ];

    const sorted = <T extends { kind: string; id: string }>(rows: T[]) =>
      [...rows].sort((a, b) => `${a.kind}/${a.id}`.localeCompare(`${b.kind}/${b.id}`));

    it('lists exactly the orphans made, each with its reason (report only: exit 0, nothing changed)', async () => {
      const r = await cli('-o', 'json');
      expect(r.code, r.stderr).toBe(0);
      const rows = JSON.parse(r.stdout) as Row[];
      const want = sorted(expected());
      expect(sorted(rows).map((o) => `${o.kind} ${o.id}`)).toEqual(want.map((o) => `${o.kind} ${o.id}`));
      for (const [i, row] of sorted(rows).entries()) expect(row.reason).toMatch(want[i].reason);
      expect(r.stderr).toContain(
        '12 orphan(s): 2 replica, 2 engine-replica, 1 nexus, 1 engine-nexus, 2 nexus-info, 2 switchover, 1 csi-node-volume, 1 volume-without-claim.',
      );
      // Both Kubernetes lists were read page by page through the fixture.
      expect(kube.requests.filter((p) => p.includes('continue=')).length).toBeGreaterThan(0);

      const table = await cli();
      expect(table.code, table.stderr).toBe(0);
      expect(table.stdout).toMatch(/^\s*KIND\s+ID\s+VOLUME\s+NODE\s+REASON/);
      expect(table.stdout).toContain('Run `storctl orphans --delete` to remove them');
      // Nothing was deleted by listing.
      expect((await cli('-o', 'json')).stdout.split('\n').length).toBe(r.stdout.split('\n').length);
      expect(await loopsOf(goneFile)).toHaveLength(1);
    });

    it('a Kubernetes API that refuses the credentials fails the command naming it, rather than calling volumes unclaimed', async () => {
      const bad = join(dir, 'kubeconfig-bad-token');
      writeFileSync(bad, kube.kubeconfig().replace('token: fixture-token', 'token: wrong'), { mode: 0o600 });
      const r = await runStorctl(['orphans', '--kubeconfig', bad, '-o', 'json'], { env: c.env });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('Kubernetes API GET /api/v1/persistentvolume');
      expect(r.stderr).toContain('answered 401');
      expect(r.stderr).toContain('must allow list on persistentvolumes and persistentvolumeclaims');
      expect(r.stdout).toBe('');
    });

    it('--delete without -y and without a terminal is a usage error (exit 2) that changes nothing', async () => {
      const r = await cli('--delete');
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('add -y');
      expect(JSON.parse((await cli('-o', 'json')).stdout)).toHaveLength(12);
    });

    it('--delete on a terminal asks first; any answer but y changes nothing', async () => {
      // `script` gives the command a pseudo-terminal, as an operator's shell does; it forwards our "n".
      const quoted = [process.execPath, STORCTL_BIN, ...args, '--delete'].map((a) => `'${a}'`).join(' ');
      const child = spawn('script', ['-qec', quoted, '/dev/null'], {
        env: { ...process.env, ...c.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('[y/N]') && !child.stdin.writableEnded) child.stdin.end('n\n');
      });
      const [code] = (await once(child, 'close')) as [number];
      expect(out).toContain('Delete 12 orphan(s) (2 replica, 2 engine-replica');
      expect(out).toContain('Nothing changed.');
      // The orphans were shown before the question.
      expect(out).toMatch(new RegExp(`csi-node-volume\\s+${goneStaged}`));
      expect(out.indexOf(goneStaged)).toBeLessThan(out.indexOf('[y/N]'));
      expect(code).toBe(0);
      expect(JSON.parse((await cli('-o', 'json')).stdout)).toHaveLength(12);
    });

    it('--delete -y removes exactly those, and the healthy volume, its replicas, nexus and NexusInfo stay', async () => {
      const r = await cli('--delete', '-y', '-o', 'json');
      expect(r.code, r.stderr).toBe(0);
      const rows = JSON.parse(r.stdout) as Row[];
      expect(rows).toHaveLength(12);
      for (const row of rows)
        expect(row.outcome?.result, `${row.kind} ${row.id}: ${row.outcome?.detail}`).toBe('deleted');

      const after = await cli('-o', 'json');
      expect(after.code, after.stderr).toBe(0);
      expect(JSON.parse(after.stdout)).toEqual([]);

      // Through core: the orphaned specs and the unclaimed volume are gone; everything else is there.
      const replicas = (await c.rest.listReplicas()).map((x) => x.uuid);
      expect(replicas).not.toContain(ownerGoneReplica);
      expect(replicas).not.toContain(ownerlessReplica);
      expect(replicas).toContain(operatorReplica);
      expect((await c.rest.listReplicas()).filter((x) => x.owner === healthy)).toHaveLength(2);
      const volumes = (await c.rest.listVolumes()).map((v) => v.spec.uuid).sort();
      expect(volumes).toEqual([healthy, pending].sort());
      const h = await c.rest.getVolume(healthy);
      expect(h.state.status).toBe('Online');
      expect(h.state.target?.uuid).toBe(healthyNexus);
      // On the io-engines: the spec-less replica and the owner-gone one are destroyed.
      const n1 = new IoEngineClient(c.engine('node-1').grpc);
      try {
        expect((await n1.listNexuses()).map((x) => x.uuid)).toEqual([healthyNexus]);
        expect((await n1.listReplicas()).map((x) => x.uuid)).not.toContain(engineNexusChild);
      } finally {
        n1.close();
      }
      for (const [node, gone] of [
        ['node-2', engineReplica],
        ['node-3', ownerGoneReplica],
      ]) {
        const e = new IoEngineClient(c.engine(node).grpc);
        try {
          expect((await e.listReplicas()).map((x) => x.uuid)).not.toContain(gone);
        } finally {
          e.close();
        }
      }
      // In the store: the healthy volume's NexusSpec and NexusInfo stay; the orphaned keys are gone.
      const store = await openStore(c.storeUrl);
      try {
        expect(await store.get(objectKey(c.space, 'NexusSpec', healthyNexus))).not.toBeNull();
        expect((await store.range(volumeNexusInfoPrefix(c.space, healthy))).kvs.length).toBeGreaterThan(0);
        expect(await store.get(objectKey(c.space, 'NexusSpec', ownerGoneNexus))).toBeNull();
        expect(await store.get(nexusInfoKey(c.space, ownerGoneNexus, missing))).toBeNull();
        expect(await store.get(objectKey(c.space, 'SwitchOver', missing))).toBeNull();
        expect(await store.get(objectKey(c.space, 'SwitchOver', healthy))).toBeNull();
      } finally {
        await store.close();
      }
      // csi-node: the deleted volume's staging dir, own dir and entry are gone; the healthy one's stay.
      const state = JSON.parse(readFileSync(join(csiState, 'state.json'), 'utf8'));
      expect(Object.keys(state.volumes)).toEqual([healthy]);
      expect(await isMountPoint(publishTarget)).toBe(false);
      expect(existsSync(publishTarget)).toBe(false);
      expect(await isMountPoint(join(csiRoot, 'plugins', 'staging', goneStaged))).toBe(false);
      expect(await procStat(proxyStandIn!.pid!)).toBeUndefined();
      expect(await loopsOf(goneFile)).toEqual([]);
      expect(existsSync(join(csiRoot, 'plugins', 'staging', goneStaged))).toBe(false);
      expect(existsSync(join(csiState, 'volumes', goneStaged))).toBe(false);
      expect(existsSync(join(csiRoot, 'plugins', 'staging', healthy))).toBe(true);
      expect(existsSync(join(csiState, 'volumes', healthy))).toBe(true);
    });
    it('with core down it still lists from the store; --delete removes store records directly and exits 6 for what needs core', async () => {
      for (const core of c.cores) await core.kill('SIGTERM');
      const lostInfo = crypto.randomUUID();
      const lostVolume = crypto.randomUUID();
      const stray = crypto.randomUUID();
      const store = await openStore(c.storeUrl);
      try {
        await store.put(
          nexusInfoKey(c.space, lostInfo, lostVolume),
          nexusInfo.encode({ children: [], clean_shutdown: true }),
        );
        await store.put(
          objectKey(c.space, 'ReplicaSpec', stray),
          replicaSpec.encode(managedReplicaSpec(stray, 'pool-node-2', null)),
        );
      } finally {
        await store.close();
      }
      const listed = await cli('-o', 'json');
      expect(listed.code, listed.stderr).toBe(0);
      expect(sorted(JSON.parse(listed.stdout) as Row[]).map((o) => `${o.kind} ${o.id}`)).toEqual([
        `nexus-info ${lostInfo}`,
        `replica ${stray}`,
      ]);
      const r = await cli('--delete', '-y');
      expect(r.code, r.stderr).toBe(6);
      expect(r.stdout).toContain('Deleted 1, skipped 0, failed 1.');
      expect(r.stderr).toMatch(new RegExp(`failed: replica ${stray}: .*core REST API .* is unreachable`));
      const check = await openStore(c.storeUrl);
      try {
        expect(await check.get(nexusInfoKey(c.space, lostInfo, lostVolume))).toBeNull();
        expect(await check.get(objectKey(c.space, 'ReplicaSpec', stray))).not.toBeNull();
        // Left for core's replica GC (or a later `orphans --delete`): a valid spec, so the store still decodes.
      } finally {
        await check.close();
      }
    });
  },
);
