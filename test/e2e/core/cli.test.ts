import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CsiClient } from '../../helpers/csi-client.js';
import { runStorctl, StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { qemuIo } from '../../integration/core/qemu.js';

/**
 * The README's "run it": a flagless `storctl up` (data dir under XDG_DATA_HOME), then flagless
 * operator commands that find it, the full volume lifecycle with data, and a clean Ctrl-C.
 */
describe('storctl up + operator commands (built CLI, flagless)', () => {
  let home: string;
  let upProc: StorctlProcess;
  let env: NodeJS.ProcessEnv;
  const cli = (...args: string[]) => runStorctl(args, { env });

  beforeAll(async () => {
    home = mkdtempSync(join(tmpdir(), 'storctl-up-'));
    // A private XDG_DATA_HOME and no STORCTL_* overrides: exactly what a user's shell has.
    env = {
      XDG_DATA_HOME: home,
      STORCTL_STORE: '',
      STORCTL_REST: '',
      STORCTL_CLUSTER_ID: '',
      STORCTL_DATA_DIR: '',
    };
    for (const k of Object.keys(env)) if (env[k] === '') env[k] = undefined;
    upProc = new StorctlProcess(['up', '--rest', '127.0.0.1:0', '--pool-capacity', '1GiB'], env);
    await waitFor(async () => /^ready: /m.test(upProc.output) || (await upProc.failIfExited('storctl up')), {
      what: 'storctl up ready',
      timeoutMs: 45_000,
    });
  }, 60_000);

  afterAll(async () => {
    await upProc?.kill('SIGINT');
    rmSync(home, { recursive: true, force: true });
  });

  it('prints its endpoints and publishes them in the data dir', () => {
    expect(upProc.output).toMatch(/REST\s+http:\/\/127\.0\.0\.1:\d+/);
    const endpoints = JSON.parse(readFileSync(join(home, 'storctl', 'endpoints.json'), 'utf8'));
    expect(endpoints.rest).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(endpoints.store).toBe(`sqlite:${join(home, 'storctl', 'store.db')}`);
  });

  it('storctl version names the CLI and every running io-engine', async () => {
    const r = await cli('version', '-o', 'json');
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as { component: string; version: string }[];
    expect(rows.map((c) => c.component)).toEqual([
      'storctl (this CLI)',
      'io-engine node-1',
      'io-engine node-2',
      'io-engine node-3',
    ]);
    expect(new Set(rows.map((c) => c.version))).toEqual(new Set([rows[0].version]));
  });

  it('starts the S3 mounter and prints its CSI socket, which answers', async () => {
    const socket = join(home, 'storctl', 'mounter', 'csi.sock');
    expect(upProc.output).toMatch(new RegExp(`^mounter +unix://${socket}$`, 'm'));
    // Transient units where systemd is the init system (sd_booted: /run/systemd/system exists, so a
    // manager answers on the system bus), else supervised processes: the one this machine calls for.
    const kind = existsSync('/run/systemd/system') ? 'systemd units' : 'supervised processes';
    expect(upProc.output).toContain(`mounter runs FUSE daemons as ${kind}`);
    expect(JSON.parse(readFileSync(join(home, 'storctl', 'endpoints.json'), 'utf8')).mounterSocket).toBe(
      socket,
    );
    const csi = new CsiClient(socket);
    try {
      expect(await csi.node('NodeGetInfo')).toMatchObject({ node_id: 'node-1' });
    } finally {
      csi.close();
    }
  });

  it('runs the volume lifecycle with data through flagless commands', async () => {
    const created = await cli('volume', 'create', '--size', '32MiB', '--replicas', '3', '-o', 'json');
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).spec.uuid as string;

    const pub = await cli('volume', 'publish', id);
    expect(pub.code, pub.stderr).toBe(0);
    const uri = pub.stdout.trim();
    expect(uri).toMatch(/^nbd:\/\//);
    await qemuIo(uri, 'write -P 0x42 0 2M');
    await qemuIo(uri, 'read -P 0x42 0 2M');

    // With core up, get tables join its live state: pool capacity and usage, target URIs.
    const pools = await cli('get', 'pools');
    expect(pools.stderr).toBe('');
    expect(pools.stdout).toMatch(/^\s*pool-node-1 .* 1GiB /m);
    expect(pools.stdout).not.toContain('<none>');
    expect((await cli('get', 'volume', id, '-o', 'wide')).stdout).toContain(uri);
    expect((await cli('get', 'nexuses', '-o', 'wide')).stdout).toContain(uri);

    // describe: one page per object, joined with core's live state; -o json is the same page.
    const page = await cli('describe', 'volume', id);
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout).toMatch(/^Name: +[0-9a-f-]{36}$/m);
    expect(page.stdout).toMatch(/^Status: +Online \(core\)$/m);
    expect(page.stdout).toMatch(new RegExp(`^  URI: +${uri.replace(/[.?]/g, '\\$&')}$`, 'm'));
    expect(page.stdout).toMatch(/^Replicas:\n.*UUID +NODE +POOL/m);
    expect(page.stdout).toMatch(/volume\/[0-9a-f]{8} +Published/);
    const pageJson = JSON.parse((await cli('describe', 'volume', id, '-o', 'json')).stdout);
    expect(pageJson.Target.URI).toBe(uri);
    expect(pageJson.Replicas).toHaveLength(3);
    expect(pageJson.Replicas.every((r: { STATE: string }) => r.STATE === 'Online')).toBe(true);
    const nodePage = await cli('describe', 'node', 'node-1');
    expect(nodePage.stdout).toMatch(/^Status: +Online$/m);
    expect(nodePage.stdout).toMatch(/pool-node-1 .* 1GiB/);
    expect((await cli('describe', 'pool', 'pool-node-1')).stdout).toMatch(/^Capacity: +1GiB$/m);
    const missing = await cli('describe', 'volume', '00000000-0000-4000-8000-000000000000');
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain('not found');

    // Publishing again where it is published answers the current target, exit 0.
    const again = await cli('volume', 'publish', id);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(uri);
    const published = JSON.parse((await cli('volume', 'publish', id, '-o', 'json')).stdout);
    const node = published.spec.target.node;
    // -o json of a volume is one object whichever command printed it: core's {spec, state}.
    const got = await cli('get', 'volume', id, '-o', 'json');
    expect(got.stderr).toBe('');
    const fromGet = JSON.parse(got.stdout);
    expect(Object.keys(fromGet).sort()).toEqual(['spec', 'state']);
    expect(fromGet.spec).toEqual(published.spec);
    expect(fromGet.state).toMatchObject({ uuid: id, status: 'Online', target: { deviceUri: uri } });
    const listed = JSON.parse((await cli('get', 'volumes', '-o', 'json')).stdout);
    // Another key space of the same store: core does not serve it, so none of its objects are shown.
    const other = await cli('get', 'volumes', '-o', 'json', '--cluster-id', 'another-cluster');
    expect(other.code, other.stderr).toBe(0);
    expect(JSON.parse(other.stdout)).toEqual([]);
    expect(other.stderr).toMatch(/^note: core at \S+ serves cluster \S+, not another-cluster\/default: /);
    // The listing is core's too (its state read a moment later: usage may have moved on).
    const inList = listed.find((v: { spec: { uuid: string } }) => v.spec.uuid === id);
    expect(inList.spec).toEqual(fromGet.spec);
    expect(inList.state).toMatchObject({ uuid: id, status: 'Online', target: { deviceUri: uri } });
    // Elsewhere, it is an error from core: the REST kind, its message and a next step; exit 4.
    const elsewhere = await cli('volume', 'publish', id, '--node', node === 'node-1' ? 'node-2' : 'node-1');
    expect(elsewhere.code).toBe(4);
    expect(elsewhere.stderr).toContain('AlreadyPublished');
    expect(elsewhere.stderr).toContain('Try: unpublish it first');

    const scaled = await cli('volume', 'scale', id, '--replicas', '2', '-o', 'json');
    expect(scaled.code, scaled.stderr).toBe(0);
    expect(JSON.parse(scaled.stdout).spec.num_replicas).toBe(2);
    expect(scaled.stderr).not.toContain('rebuild'); // removing a replica rebuilds nothing
    await qemuIo(uri, 'read -P 0x42 0 2M');

    const grown = await cli('volume', 'scale', id, '3'); // kubectl-mayastor's form
    expect(grown.code, grown.stderr).toBe(0);
    expect(grown.stderr).toContain('rebuild complete');
    await qemuIo(uri, 'read -P 0x42 0 2M');
    // Scaling to the count it has is a no-op, not a conflict.
    const same = await cli('volume', 'scale', id, '--replicas', '3', '-o', 'json');
    expect(same.code, same.stderr).toBe(0);
    expect(JSON.parse(same.stdout).spec.num_replicas).toBe(3);

    const snap = await cli('snapshot', 'create', id, '-o', 'json');
    expect(snap.code, snap.stderr).toBe(0);
    const snapshot = JSON.parse(snap.stdout);
    const snapId = snapshot.definition.spec.uuid;
    // The snapshot get prints is the one snapshot create printed: REST's {definition, state}.
    const snaps = JSON.parse((await cli('get', 'snapshots', '--volume', id, '-o', 'json')).stdout);
    expect(snaps).toHaveLength(1);
    expect(snaps[0].definition).toEqual(snapshot.definition);
    expect(snaps[0].state).toMatchObject({ uuid: snapId, source_volume: id, ready_as_source: true });
    // It prints through -o jsonpath too, as the commands that print one volume do.
    const second = crypto.randomUUID();
    const byPath = await cli('snapshot', 'create', id, second, '-o', 'jsonpath={.definition.spec.uuid}');
    expect(byPath.code, byPath.stderr).toBe(0);
    expect(byPath.stdout.trim()).toBe(second);
    expect((await cli('snapshot', 'delete', second)).code).toBe(0);
    // Restored: a volume made from the snapshot, of its size, holding what was written before it.
    const restored = await cli(
      'volume',
      'create',
      '--from-snapshot',
      snapId,
      '--replicas',
      '1',
      '-o',
      'json',
    );
    expect(restored.code, restored.stderr).toBe(0);
    const clone = JSON.parse(restored.stdout).spec;
    expect(clone.size).toBe(32 * 1024 * 1024);
    const cloneUri = (await cli('volume', 'publish', clone.uuid)).stdout.trim();
    await qemuIo(cloneUri, 'read -P 0x42 0 2M');
    expect((await cli('volume', 'unpublish', clone.uuid)).code).toBe(0);
    expect((await cli('volume', 'delete', clone.uuid)).code).toBe(0);
    expect((await cli('snapshot', 'delete', snapId)).code).toBe(0);

    // Published, it is refused: a host may be using it. Nothing is deleted.
    const inUse = await cli('volume', 'delete', id);
    expect(inUse.code).toBe(4);
    expect(inUse.stderr).toContain(`InUse: volume '${id}' is published on node '${node}'`);
    expect(inUse.stderr).toContain('Try: unpublish it first (`storctl volume unpublish <id>`)');
    await qemuIo(uri, 'read -P 0x42 0 2M');
    expect((await cli('volume', 'unpublish', id)).code).toBe(0);
    expect((await cli('volume', 'delete', id)).code).toBe(0);
    const gone = await cli('volume', 'delete', id);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain('NotFound');
    // --force deletes one that is published.
    const forced = JSON.parse((await cli('volume', 'create', '--size', '4Mi', '-o', 'json')).stdout).spec
      .uuid;
    expect((await cli('volume', 'publish', forced)).code).toBe(0);
    const deletedAnyway = await cli('volume', 'delete', forced, '--force');
    expect(deletedAnyway.code, deletedAnyway.stderr).toBe(0);
    expect((await cli('get', 'volume', forced)).code).toBe(3);

    const events = await cli('events', '--resource', 'volume', '-o', 'json');
    const actions = (JSON.parse(events.stdout) as { id: string; action: string }[])
      .filter((e) => e.id === id)
      .map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining(['Created', 'Published', 'Scaled', 'Unpublished', 'Deleted']),
    );
  });

  it('a thick volume shows what it holds; a snapshot that fails names the record it leaves Creating, to retry or delete', async () => {
    // A thick replica of 520 MiB in a 1 GiB pool: its snapshot would need 520 MiB more.
    const created = await cli('volume', 'create', '--size', '520MiB', '--replicas', '1', '-o', 'json');
    expect(created.code, created.stderr).toBe(0);
    const id = JSON.parse(created.stdout).spec.uuid as string;
    // The table shows what the thick replica holds on disk, as core reports it.
    const [header, row] = (await cli('get', 'volume', id)).stdout
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s{2,}/));
    expect(Object.fromEntries(header.map((h, i) => [h, row[i]]))).toMatchObject({
      ID: id,
      SIZE: '520MiB',
      'THIN-PROVISIONED': 'false',
      ALLOCATED: '520MiB',
    });
    // So does its replica's row in the cluster-wide replica topology.
    const topology = (await cli('get', 'volume-replica-topologies')).stdout
      .split('\n')
      .find((l) => l.trim().startsWith(id));
    expect(
      topology
        ?.trim()
        .split(/\s{2,}/)
        .slice(4, 8),
    ).toEqual(['Online', '520MiB', '520MiB', '0 B']);
    const failed = await cli('snapshot', 'create', id);
    expect(failed.code).toBe(4);
    expect(failed.stderr).toMatch(/ResourceExhausted: .*a snapshot of replica/);
    const named = failed.stderr.match(
      /Try: snapshot ([0-9a-f-]{36}) stays recorded as Creating: retry it with `storctl snapshot create (\S+) \1`, or remove it with `storctl snapshot delete \1`/,
    );
    expect(named, failed.stderr).not.toBeNull();
    expect(named![2]).toBe(id);
    const left = JSON.parse((await cli('get', 'snapshots', '--volume', id, '-o', 'json')).stdout);
    expect(
      left.map((x: { definition: { spec: { uuid: string }; metadata: { status: string } } }) => [
        x.definition.spec.uuid,
        x.definition.metadata.status,
      ]),
    ).toEqual([[named![1], 'Creating']]);
    // The wide table says so too.
    const wide = (await cli('get', 'snapshots', '--volume', id, '-o', 'wide')).stdout.trim().split('\n');
    expect(wide[0]).toMatch(/ STATUS +OPERATION$/);
    expect(wide[1]).toMatch(new RegExp(`^ ?${named![1]} .* Creating +\\S+$`));
    const deleted = await cli('snapshot', 'delete', named![1]);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(JSON.parse((await cli('get', 'snapshots', '--volume', id, '-o', 'json')).stdout)).toEqual([]);
    expect((await cli('volume', 'delete', id)).code).toBe(0);
  });

  it('cordons, labels and drains nodes; pools refuse deletion while in use', async () => {
    const cordon = await cli('node', 'cordon', 'node-1', '-o', 'json');
    expect(cordon.code, cordon.stderr).toBe(0);
    expect(JSON.parse(cordon.stdout).state.cordoned).toBe(true);
    // Cordoned node-1 is skipped: a 3-replica volume no longer fits on 3 nodes.
    const tooMany = await cli('volume', 'create', '--size', '8MiB', '--replicas', '3');
    expect(tooMany.code).toBe(4);
    expect(tooMany.stderr).toMatch(/ResourceExhausted: .*node cordoned/);
    expect((await cli('node', 'uncordon', 'node-1')).code).toBe(0);
    // kubectl-mayastor's form: the label as the second argument.
    const maint = await cli('node', 'cordon', 'node-1', 'maint', '-o', 'json');
    expect(maint.code, maint.stderr).toBe(0);
    expect(JSON.parse(maint.stdout).spec.cordondrainstate.cordonedstate.cordonlabels).toEqual(['maint']);
    expect((await cli('node', 'uncordon', 'node-1', 'maint')).code).toBe(0);
    expect(JSON.parse((await cli('get', 'node', 'node-1', '-o', 'json')).stdout).state.cordoned).toBe(false);

    const label = await cli('node', 'label', 'node-2', 'zone=b', '-o', 'json');
    expect(JSON.parse(label.stdout).spec.labels).toEqual({ zone: 'b' });
    expect((await cli('node', 'label', 'node-2', 'zone-')).code).toBe(0);

    const v = JSON.parse(
      (await cli('volume', 'create', '--size', '8MiB', '--replicas', '2', '-o', 'json')).stdout,
    ).spec.uuid;
    const pub = await cli('volume', 'publish', v, '--node', 'node-3', '-o', 'json');
    expect(JSON.parse(pub.stdout).spec.target.node).toBe('node-3');
    const drain = await cli('node', 'drain', 'node-3', '--wait');
    expect(drain.code, drain.stderr).toBe(0);
    expect(drain.stderr).toContain('node node-3 drained');
    const vol = await fetch(
      `${JSON.parse(readFileSync(join(home, 'storctl', 'endpoints.json'), 'utf8')).rest}/v0/volumes/${v}`,
    ).then((r) => r.json() as Promise<{ spec: { target: { node: string } } }>);
    expect(vol.spec.target.node).not.toBe('node-3');
    // Without --label, uncordon removes the node's one label: here the drain's.
    const wide = await cli('get', 'nodes', '-o', 'wide');
    expect(wide.stdout).toMatch(/DRAIN LABELS/);
    expect(wide.stdout).toMatch(/node-3 .*storctl-drain/);
    const uncordoned = await cli('node', 'uncordon', 'node-3');
    expect(uncordoned.code, uncordoned.stderr).toBe(0);
    const notCordoned = await cli('node', 'uncordon', 'node-3');
    expect(notCordoned.code).toBe(4);
    expect(notCordoned.stderr).toContain("node 'node-3' is not cordoned or draining");

    const pools = await cli('pool', 'delete', 'pool-node-1');
    expect(pools.code).toBe(4);
    expect(pools.stderr).toContain('InUse');
    const newPool = await cli('pool', 'create', 'node-1', 'extra', '--capacity', '64MiB', '-o', 'json');
    expect(newPool.code, newPool.stderr).toBe(0);
    // No --disk: the io-engine's default directory, and the pool says which (not an empty disk).
    const made = JSON.parse(newPool.stdout) as { spec: { disks: string[] }; state: { disks: string[] } };
    expect(made.spec.disks).toEqual([expect.stringMatching(/\/extra$/)]);
    expect(made.state.disks).toEqual(made.spec.disks);
    // The same create again is the same pool.
    expect((await cli('pool', 'create', 'node-1', 'extra', '--capacity', '64MiB')).code).toBe(0);
    expect((await cli('pool', 'delete', 'extra')).code).toBe(0);
    await cli('volume', 'unpublish', v);
    await cli('volume', 'delete', v);
  });

  it('events --watch follows new lifecycle events as they are written', async () => {
    const watcher = new StorctlProcess(['events', '--watch', '-o', 'json', '--resource', 'volume'], env);
    try {
      // History is printed first, then new events: the create is seen however the two race.
      const created = await cli('volume', 'create', '--size', '4MiB', '-o', 'json');
      const id = JSON.parse(created.stdout).spec.uuid as string;
      const line = await waitFor(
        async () =>
          watcher.output.split('\n').find((l) => l.includes(id) && l.includes('"Created"')) ??
          (await watcher.failIfExited('storctl events --watch')),
        { what: 'the create event on the watch' },
      );
      expect(JSON.parse(line)).toMatchObject({ resource: 'volume', id, action: 'Created' });
      await cli('volume', 'delete', id);
      await waitFor(
        async () =>
          watcher.output.split('\n').some((l) => l.includes(id) && l.includes('"Deleted"')) ||
          (await watcher.failIfExited('storctl events --watch')),
        { what: 'the delete event' },
      );
    } finally {
      expect(await watcher.kill('SIGINT')).toBe(0);
    }
  });

  it('get volumes --watch prints the table again when a volume is created, until Ctrl-C', async () => {
    const watcher = new StorctlProcess(['get', 'volumes', '--watch'], env);
    try {
      // The first table (every earlier volume is deleted by now: it says so instead).
      await waitFor(
        async () =>
          /THIN-PROVISIONED|No resources found/.test(watcher.output) || (await watcher.failIfExited()),
        { what: 'the first table' },
      );
      const created = await cli('volume', 'create', '--size', '4Mi', '-o', 'json');
      const id = JSON.parse(created.stdout).spec.uuid as string;
      await waitFor(async () => watcher.output.includes(id) || (await watcher.failIfExited()), {
        what: 'the new volume in a later table',
      });
      await cli('volume', 'delete', id);
    } finally {
      expect(await watcher.kill('SIGINT')).toBe(0);
    }
    const json = await cli('get', 'volumes', '--watch', '-o', 'json');
    expect(json.code).toBe(2);
    expect(json.stderr).toContain('storctl events --watch');
  });

  it('stops every role on Ctrl-C and withdraws its endpoints', async () => {
    const rest = JSON.parse(readFileSync(join(home, 'storctl', 'endpoints.json'), 'utf8')).rest;
    const kept = JSON.parse((await cli('volume', 'create', '--size', '4Mi', '-o', 'json')).stdout);
    expect((await cli('volume', 'publish', kept.spec.uuid)).code).toBe(0);
    const bySpec = (list: { spec: { uuid: string } }[]) =>
      list.map((v) => v.spec).sort((a, b) => a.uuid.localeCompare(b.uuid));
    const live = JSON.parse((await cli('get', 'volumes', '-o', 'json')).stdout);
    expect(live.every((v: { state?: unknown }) => v.state)).toBe(true);
    const code = await upProc.kill('SIGINT');
    expect(code).toBe(0);
    expect(upProc.output).toContain('stopped');
    await expect(fetch(`${rest}/v0/nodes`)).rejects.toThrow();
    const after = await cli('volume', 'create', '--size', '1MiB');
    expect(after.code).toBe(6);
    expect(after.stderr).toContain('storctl up');
    // get still answers from the store, and says what it cannot show.
    const stored = await cli('get', 'pools');
    expect(stored.code).toBe(0);
    expect(stored.stdout).toMatch(/^\s*pool-node-1 /m);
    expect(stored.stderr).toContain('showing stored specs only');
    const storedVolumes = await cli('get', 'volumes');
    expect(storedVolumes.code).toBe(0);
    expect(storedVolumes.stdout).toContain(kept.spec.uuid);
    expect(storedVolumes.stderr).toContain('showing stored specs only');
    // -o json from the store alone: the same specs core printed, without the state only core knows.
    const fromStore = await cli('get', 'volumes', '-o', 'json');
    expect(fromStore.code).toBe(0);
    expect(fromStore.stderr).toBe('');
    const down = JSON.parse(fromStore.stdout);
    expect(down.some((v: { state?: unknown }) => v.state)).toBe(false);
    expect(bySpec(down)).toEqual(bySpec(live));
    expect(bySpec(down).find((v) => v.uuid === kept.spec.uuid)).toMatchObject({
      target: { protocol: 'nbd' },
    });
  });
});
