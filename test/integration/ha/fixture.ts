import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { switchOver } from '../../../src/lib/specs/index.js';
import { objectKey } from '../../../src/lib/store/keys.js';
import { openStore } from '../../../src/lib/store/open.js';
import type { Store } from '../../../src/lib/store/types.js';
import { stageRequest } from '../../helpers/csi-client.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { FAST_CORE_FLAGS, TestCluster } from '../core/cluster.js';
import { CsiNodeFixture } from '../csi-node/fixture.js';

const MiB = 1024 * 1024;

/** The fast HA timings the tests run with (the issue's: path checks every 250 ms). */
export const FAST_HA_NODE_FLAGS = [
  '--interval',
  '250ms',
  '--probe-timeout',
  '1s',
  '--fail-after',
  '2',
  '--retransmit-period',
  '500ms',
  '--report-again',
  '1s',
];

/** Wait for a daemon's `<what> listening on HOST:PORT` line and return HOST:PORT. */
export async function listeningOn(proc: StorctlProcess, what: string): Promise<string> {
  const re = new RegExp(`${what} listening on (\\S+)`);
  return waitFor(
    async () => {
      const m = re.exec(proc.output);
      return m ? m[1] : (await proc.failIfExited(what)) || null;
    },
    { what: `${what} to listen`, timeoutMs: 30_000 },
  );
}

/**
 * `storctl daemon ha-cluster` against the cluster's core and store, on a free port, started (not yet
 * listening nor elected): a 2 s leadership lease, retries every `retryDelay`, then `extra` flags.
 */
export function haClusterProcess(
  cluster: TestCluster,
  o: { retryDelay?: string; extra?: string[] } = {},
): StorctlProcess {
  return new StorctlProcess(
    [
      'daemon',
      'ha-cluster',
      '--rest',
      cluster.restUrl,
      '--grpc',
      '127.0.0.1:0',
      '--retry-delay',
      o.retryDelay ?? '200ms',
      '--lease-ttl',
      '2',
      ...(o.extra ?? []),
    ],
    cluster.env,
  );
}

/** An ha-cluster (haClusterProcess) once it listens and is the elected, active one. */
export async function startHaCluster(
  cluster: TestCluster,
  extra: string[] = [],
): Promise<{ proc: StorctlProcess; endpoint: string }> {
  const proc = haClusterProcess(cluster, { extra });
  const endpoint = await listeningOn(proc, 'ha-cluster');
  await waitFor(
    async () => proc.output.includes('"ha-cluster active"') || (await proc.failIfExited('ha-cluster')),
    {
      what: 'ha-cluster to be elected',
      timeoutMs: 30_000,
    },
  );
  return { proc, endpoint };
}

/** `storctl daemon ha-node` for the csi-node fixture's node. */
export async function startHaNode(
  cluster: TestCluster,
  o: { node: string; clusters: string[]; csiNode: string },
): Promise<{ proc: StorctlProcess; endpoint: string }> {
  const proc = new StorctlProcess(
    [
      'daemon',
      'ha-node',
      '--node',
      o.node,
      '--cluster',
      o.clusters.join(','),
      '--csi-node',
      o.csiNode,
      '--grpc',
      '127.0.0.1:0',
      ...FAST_HA_NODE_FLAGS,
    ],
    cluster.env,
  );
  return { proc, endpoint: await listeningOn(proc, 'ha-node') };
}

/** FAST_CORE_FLAGS with a 30 s core lease: HA tests pause core (SIGSTOP) for seconds at a time. */
export const PAUSABLE_CORE_FLAGS = [
  ...FAST_CORE_FLAGS.filter((f, i, a) => f !== '--lease-ttl' && a[i - 1] !== '--lease-ttl'),
  '--lease-ttl',
  '30',
];

export interface PublishedVolume {
  id: string;
  uri: string;
  nexus: string;
  node: string;
}

/**
 * What every HA test and bench/ha.ts runs on: a cluster, the csi-node (node `csi-node-1`), an
 * ha-cluster and an ha-node watching the csi-node; volumes published for that node and staged
 * through it. `stop()` undoes all of it.
 */
export class HaRig {
  ha!: { proc: StorctlProcess; endpoint: string };
  haNode!: { proc: StorctlProcess; endpoint: string };
  readonly node: CsiNodeFixture;
  private readonly staged: { id: string; staging: string; device?: string }[] = [];
  /** The cluster's store, opened for switchoverStage. */
  private store: Store | undefined;

  private constructor(readonly cluster: TestCluster) {
    this.node = new CsiNodeFixture(cluster.restUrl);
  }

  static async start(options: Parameters<typeof TestCluster.start>[0]): Promise<HaRig> {
    const rig = new HaRig(await TestCluster.start(options));
    try {
      await rig.node.start();
      await rig.startHaCluster();
      rig.haNode = await startHaNode(rig.cluster, {
        node: 'csi-node-1',
        clusters: [rig.ha.endpoint],
        csiNode: String(rig.node.ready.fsEndpoint),
      });
    } catch (err) {
      await rig.stop();
      throw err;
    }
    return rig;
  }

  /** Start an ha-cluster (again, after a test killed the last one); it becomes `ha`. */
  async startHaCluster(): Promise<{ proc: StorctlProcess; endpoint: string }> {
    this.ha = await startHaCluster(this.cluster);
    return this.ha;
  }

  /** Wait until the volume is Online with `replicas` children in its nexus. */
  healthy(id: string, replicas = 2, timeoutMs = 20_000): Promise<unknown> {
    return waitFor(
      async () => {
        const v = await this.cluster.rest.getVolume(id);
        return v.state.status === 'Online' && (v.state.target?.children ?? []).length === replicas;
      },
      { what: `volume ${id} Online with ${replicas} replicas in its nexus`, timeoutMs },
    );
  }

  /** A thin volume published on `targetNode` for csi-node-1, returned once every replica is in its nexus. */
  async published(
    targetNode: string,
    o: { size?: number; replicas?: number } = {},
  ): Promise<PublishedVolume> {
    const id = randomUUID();
    const replicas = o.replicas ?? 2;
    await this.cluster.rest.createVolume(id, {
      size: o.size ?? 32 * MiB,
      replicas,
      thin: true,
      policy: { self_heal: true },
    });
    const v = await this.cluster.rest.publishVolume(id, {
      protocol: 'nbd',
      publish_context: {},
      node: targetNode,
      frontend_node: 'csi-node-1',
    });
    await this.healthy(id, replicas);
    return { id, uri: v.state.target!.deviceUri, nexus: v.state.target!.uuid, node: targetNode };
  }

  /**
   * Stage the volume through the csi-node: ext4 mounted at the returned staging path, or (block) a
   * raw device, published as the device file whose path is returned.
   */
  async stage(vol: { id: string; uri: string }, { block = false } = {}): Promise<string> {
    const csi = this.node.csi!;
    const staging = join(this.node.root, 'plugins', vol.id, 'globalmount');
    await csi.node('NodeStageVolume', stageRequest({ volumeId: vol.id, staging, uri: vol.uri, block }));
    if (!block) {
      this.staged.push({ id: vol.id, staging });
      return staging;
    }
    const device = join(this.node.root, 'pods', 'ha', 'volumeDevices', vol.id);
    this.staged.push({ id: vol.id, staging, device });
    await csi.node('NodePublishVolume', {
      volume_id: vol.id,
      staging_target_path: staging,
      target_path: device,
      readonly: false,
      volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } },
    });
    return device;
  }

  /** The stage of the volume's SwitchOver record as stored ('Errored' for an error), null when there is none. */
  async switchoverStage(id: string): Promise<string | null> {
    this.store ??= await openStore(this.cluster.storeUrl);
    const key = objectKey(this.cluster.space, 'SwitchOver', id);
    const kv = await this.store.get(key);
    if (!kv) return null;
    const op = switchOver.decode(key, kv.value).operation?.operation;
    return typeof op === 'string' ? op : op ? 'Errored' : null;
  }

  /** Unpublish and unstage what was staged, stop the agents, the csi-node and the cluster. */
  async stop(): Promise<void> {
    await this.store?.close();
    const csi = this.node.csi;
    for (const s of this.staged) {
      if (s.device)
        await csi?.node('NodeUnpublishVolume', { volume_id: s.id, target_path: s.device }).catch(() => {});
      await csi
        ?.node('NodeUnstageVolume', { volume_id: s.id, staging_target_path: s.staging })
        .catch(() => {});
    }
    await this.haNode?.proc.kill('SIGTERM');
    await this.ha?.proc.kill('SIGTERM');
    await this.node.dispose();
    await this.cluster.stop();
  }
}
