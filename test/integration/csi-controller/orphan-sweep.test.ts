import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStorctl, type StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { TestCluster } from '../core/cluster.js';
import { RecordedKubeApiFixture, recordedPv, recordedPvc } from '../orphans/kube-fixture.js';
import { startController } from './controller-process.js';

const volume = (c: TestCluster, id: string) =>
  c.rest.createVolume(id, { size: 4 << 20, replicas: 1, thin: true, policy: { self_heal: false } });

/**
 * csi-controller's sweep of volumes without PV or PVC, against a recorded Kubernetes API fixture:
 * a claimed volume is never touched; an unclaimed one is reported only after the grace period and a
 * second look, and deleted through core only with --orphan-gc delete.
 */
describe('csi-controller --orphan-gc (recorded Kubernetes API fixture)', () => {
  let cluster: TestCluster;
  let kube: RecordedKubeApiFixture;
  let dir: string;
  const procs: StorctlProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'storctl-orphan-gc-'));
    cluster = await TestCluster.start({ engines: 1 });
    kube = new RecordedKubeApiFixture('sweep-token');
    await kube.start();
    writeFileSync(join(dir, 'kubeconfig'), kube.kubeconfig(), { mode: 0o600 });
  }, 120_000);
  afterAll(async () => {
    for (const p of procs) await p.kill('SIGTERM');
    await kube?.stop();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const controller = async (mode: string, name: string) => {
    const sub = join(dir, name);
    const { proc } = await startController(sub, cluster.restUrl, cluster.env, [
      '--orphan-gc',
      mode,
      '--orphan-gc-period',
      '200ms',
      '--orphan-gc-grace',
      '1s',
      '--kubeconfig',
      join(dir, 'kubeconfig'),
      '--log-level',
      'info',
    ]);
    procs.push(proc);
    return proc;
  };
  const reported = (proc: StorctlProcess, id: string) =>
    proc.output
      .split('\n')
      .some((l) => l.includes(id) && l.includes('no PersistentVolume and no PersistentVolumeClaim'));

  it('report: the unclaimed volume is reported after the grace period and kept; the claimed one is not', async () => {
    const claimed = crypto.randomUUID();
    const pending = crypto.randomUUID();
    const unclaimed = crypto.randomUUID();
    for (const id of [claimed, pending, unclaimed]) await volume(cluster, id);
    const uid = crypto.randomUUID();
    kube.pvs = [recordedPv(claimed, { namespace: 'default', name: 'data', uid })];
    // A PVC still being provisioned names the volume by its uid.
    kube.pvcs = [recordedPvc('default', 'data', uid, `pvc-${uid}`), recordedPvc('default', 'new', pending)];
    const started = Date.now();
    const proc = await controller('report', 'report');
    await waitFor(() => reported(proc, unclaimed), { what: 'the unclaimed volume reported' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(reported(proc, claimed) || reported(proc, pending)).toBe(false);
    expect((await cluster.rest.listVolumes()).map((v) => v.spec.uuid).sort()).toEqual(
      [claimed, pending, unclaimed].sort(),
    );
    await proc.kill('SIGTERM');
    for (const id of [claimed, pending, unclaimed]) await cluster.rest.deleteVolume(id);
  });

  it('delete: only the unclaimed volume is deleted, through core; a published one is left in use', async () => {
    const claimed = crypto.randomUUID();
    // Listed (and swept) before the other: its refusal must not stop the sweep.
    const inUse = `00000000${crypto.randomUUID().slice(8)}`;
    const unclaimed = `ffffffff${crypto.randomUUID().slice(8)}`;
    for (const id of [claimed, inUse, unclaimed]) await volume(cluster, id);
    await cluster.rest.publishVolume(inUse, { protocol: 'nbd', publish_context: {}, node: 'node-1' });
    kube.pvs = [recordedPv(claimed, { namespace: 'default', name: 'kept', uid: crypto.randomUUID() })];
    kube.pvcs = [];
    const proc = await controller('delete', 'delete');
    await waitFor(async () => !(await cluster.rest.listVolumes()).some((v) => v.spec.uuid === unclaimed), {
      what: 'the unclaimed volume deleted',
    });
    // Core answers the delete before the daemon logs it: wait for the line, don't race it.
    await waitFor(() => proc.output.includes('orphaned volume deleted'), { what: 'the deletion logged' });
    await waitFor(() => proc.output.includes('volume without claims is published (in use): not deleted'), {
      what: 'the published one left alone',
    });
    expect((await cluster.rest.listVolumes()).map((v) => v.spec.uuid).sort()).toEqual(
      [claimed, inUse].sort(),
    );
    await proc.kill('SIGTERM');
    await cluster.rest.unpublishVolume(inUse);
    for (const id of [claimed, inUse]) await cluster.rest.deleteVolume(id);
  });

  it('without a Kubernetes API the sweep is a usage error (exit 2)', async () => {
    const r = await runStorctl(
      ['daemon', 'csi-controller', '--endpoint', `unix://${join(dir, 'x.sock')}`, '--orphan-gc', 'report'],
      { env: { ...cluster.env, KUBECONFIG: undefined, KUBERNETES_SERVICE_HOST: undefined } },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--orphan-gc needs a Kubernetes API');
  });
});
