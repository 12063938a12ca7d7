import * as grpc from '@grpc/grpc-js';
import { serviceClient } from '../../lib/grpc/client.js';
import { bindTcp } from '../../lib/grpc/listen.js';
import { GrpcError, unary } from '../../lib/grpc/status.js';
import type { FailedPath, FailedPathStatus, SwitchoverProgress } from '../../lib/ha/clients.js';
import { haClusterElection } from '../../lib/ha/election.js';
import { createLogger } from '../../lib/logger.js';
import { MeteredGrpcServer } from '../../lib/metrics/grpc.js';
import { RestClient } from '../../lib/rest/client.js';
import { RestError } from '../../lib/rest/errors.js';
import type { Volume } from '../../lib/rest/types.js';
import type { SwitchOverSpec } from '../../lib/specs/index.js';
import { campaign, type Leadership } from '../../lib/store/election.js';
import type { KeySpace } from '../../lib/store/keys.js';
import type { Store } from '../../lib/store/types.js';
import { SwitchOverRecords, stageName, stageOf } from './records.js';
import { publishedTarget, type SwitchoverConfig, SwitchoverEngine } from './switchover.js';

export interface HaClusterConfig extends SwitchoverConfig {
  restUrl: string;
  listen: { host: string; port: number };
  store: Store;
  keySpace: KeySpace;
  /** Leadership lease TTL: a standby takes over this long after the active one died. */
  leaseTtlSeconds: number;
  logLevel?: string;
}

export interface HaClusterDaemon {
  endpoint: string;
  /** Resolves once this instance is the active ha-cluster. */
  elected: Promise<void>;
  /** Rejects/resolves when leadership ends (lease lost): the process should exit and be restarted. */
  lost: Promise<string>;
  stop(): Promise<void>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The HA cluster agent: takes failed-path reports from the node agents and operator switchover
 * requests, and drives each volume's switchover (switchover.ts). One instance is active (store
 * election); a standby serves the same address space but refuses until it is elected.
 */
export async function start(config: HaClusterConfig): Promise<HaClusterDaemon> {
  const log = createLogger('ha-cluster', config.logLevel);
  const rest = new RestClient(config.restUrl, { timeoutMs: 15_000 });
  const agents = new Map<string, string>();
  let leadership: Leadership | null = null;
  let engine: SwitchoverEngine | null = null;
  const records = new SwitchOverRecords(config.store, config.keySpace, () => ({
    key: leadership!.key,
    target: 'lease',
    op: '==',
    value: leadership!.lease.id,
  }));

  const active = (): SwitchoverEngine => {
    if (!engine)
      throw new GrpcError(grpc.status.UNAVAILABLE, 'this ha-cluster is a standby; ask the active one');
    return engine;
  };

  /** Whether core serves a target for the volume (true when core cannot say: let the switchover find out). */
  const isPublished = (volume: string) =>
    rest.getVolume(volume).then(
      (v) => servedTarget(v) !== undefined,
      (err) => !(err instanceof RestError && err.kind === 'NotFound'),
    );

  const switchover = (
    call: grpc.ServerWritableStream<{ volume_id?: string; to_node?: string }, SwitchoverProgress>,
  ) => {
    void (async () => {
      try {
        const eng = active();
        const volume = call.request.volume_id ?? '';
        if (!UUID.test(volume))
          throw new GrpcError(
            grpc.status.INVALID_ARGUMENT,
            `volume_id '${volume.slice(0, 64)}' is not a uuid`,
          );
        let entry = eng.active(volume);
        if (!entry) {
          const v = await rest.getVolume(volume).catch((err) => {
            if (err instanceof RestError && err.kind === 'NotFound')
              throw new GrpcError(grpc.status.NOT_FOUND, `volume ${volume} not found`);
            throw new GrpcError(grpc.status.UNAVAILABLE, `core: ${(err as Error).message}`);
          });
          const target = publishedTarget(v);
          if (!target)
            throw new GrpcError(
              grpc.status.FAILED_PRECONDITION,
              `volume ${volume} is not published: there is no target to move`,
            );
          const toNode = call.request.to_node || undefined;
          if (toNode === target.node)
            throw new GrpcError(
              grpc.status.FAILED_PRECONDITION,
              `the target of volume ${volume} is already on node ${toNode}`,
            );
          const elsewhere = Object.values(v.state.replica_topology).filter(
            (r) => r.node && r.node !== target.node && r.state === 'Online',
          );
          if (elsewhere.length === 0)
            throw new GrpcError(
              grpc.status.FAILED_PRECONDITION,
              `volume ${volume} has no healthy replica on a node other than ${target.node}; scale it up first (storctl volume scale)`,
            );
          const frontend = v.spec.target?.frontend_nodes?.[0]?.name ?? '';
          const spec = newRecord(volume, frontend, agents.get(frontend) ?? '', target.deviceUri);
          if (toNode) spec.target_node = toNode;
          entry = (await eng.start(spec)) ?? eng.active(volume);
          if (!entry)
            throw new GrpcError(grpc.status.ABORTED, `another switchover of volume ${volume} just started`);
        }
        const e = entry;
        call.write(eng.progress(e));
        const listener = (p: SwitchoverProgress) => {
          call.write(p);
          if (p.done) {
            e.listeners.delete(listener);
            call.end();
          }
        };
        e.listeners.add(listener);
        call.on('cancelled', () => e.listeners.delete(listener));
      } catch (err) {
        const e = err as GrpcError;
        // grpc-js ends a server stream with this status (destroy would answer CANCELLED).
        call.emit('error', { code: e.code ?? grpc.status.INTERNAL, details: e.message, message: e.message });
      }
    })();
  };

  const server = new MeteredGrpcServer();
  server.addService(serviceClient('ha.proto', 'storctl.ha.v1.HaCluster').service, {
    RegisterNodeAgent: unary(async (req: { node?: string; endpoint?: string }) => {
      active();
      if (!req.node || !req.endpoint)
        throw new GrpcError(grpc.status.INVALID_ARGUMENT, 'node and endpoint are required');
      if (agents.get(req.node) !== req.endpoint)
        log.info({ node: req.node, endpoint: req.endpoint }, 'node agent registered');
      agents.set(req.node, req.endpoint);
      return {};
    }),
    ReportFailedPaths: unary(
      async (req: { node?: string; endpoint?: string; failed_paths?: FailedPath[] }) => {
        const eng = active();
        if (!req.node || !req.endpoint)
          throw new GrpcError(grpc.status.INVALID_ARGUMENT, 'node and endpoint are required');
        agents.set(req.node, req.endpoint);
        const statuses: FailedPathStatus[] = [];
        for (const p of req.failed_paths ?? []) {
          const no = (code: grpc.status, message: string) =>
            statuses.push({ volume_id: p.volume_id, status_code: code, message });
          if (!UUID.test(p.volume_id ?? '')) {
            no(grpc.status.INVALID_ARGUMENT, `volume_id '${String(p.volume_id).slice(0, 64)}' is not a uuid`);
            continue;
          }
          const running = eng.active(p.volume_id);
          if (running) {
            const stage = stageName(stageOf(running.rec.spec));
            no(
              stage === 'Init' || stage === 'RepublishVolume'
                ? grpc.status.ALREADY_EXISTS
                : grpc.status.FAILED_PRECONDITION,
              `a switchover of volume ${p.volume_id} is at ${stage}`,
            );
            continue;
          }
          // Reported again after its switchover ended Errored: a new one can re-point the path once
          // the volume has a target again, not before (it would only end Errored once more).
          if (eng.errored(p.volume_id) && !(await isPublished(p.volume_id))) {
            no(
              grpc.status.FAILED_PRECONDITION,
              `volume ${p.volume_id} is not published: its path is re-pointed once it is published again`,
            );
            continue;
          }
          const started = await eng.start(newRecord(p.volume_id, req.node, req.endpoint, p.target_uri));
          if (!started)
            no(grpc.status.ALREADY_EXISTS, `a switchover of volume ${p.volume_id} is already recorded`);
          else
            log.info(
              { volume: p.volume_id, node: req.node, target: p.target_uri, reason: p.reason },
              'failed path reported; switchover started',
            );
        }
        return { statuses };
      },
    ),
    Switchover: switchover,
    CancelSwitchover: unary(async (req: { volume_id?: string; force?: boolean }) => {
      const eng = active();
      try {
        return { stage: await eng.cancel(req.volume_id ?? '', !!req.force) };
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code !== undefined) throw new GrpcError(code, (err as Error).message);
        throw err;
      }
    }),
  });
  const endpoint = await bindTcp(server, config.listen);
  const abort = new AbortController();

  let resolveLost!: (why: string) => void;
  const lost = new Promise<string>((r) => {
    resolveLost = r;
  });
  const elected = (async () => {
    log.info({ endpoint }, 'ha-cluster up; waiting to be the active one');
    leadership = await campaign(
      config.store,
      haClusterElection(config.keySpace),
      JSON.stringify({ endpoint }),
      {
        ttlSeconds: config.leaseTtlSeconds,
        signal: abort.signal,
      },
    );
    leadership.lost.addEventListener('abort', () => {
      engine?.stop();
      engine = null;
      resolveLost('the ha-cluster leadership lease was lost');
    });
    const eng = new SwitchoverEngine({
      records,
      rest,
      space: config.keySpace,
      config,
      log,
      agentEndpoint: (node) => agents.get(node),
    });
    const resumed = await eng.resume();
    engine = eng;
    log.info({ endpoint, resumed }, 'ha-cluster active');
  })();
  elected.catch(() => {});

  return {
    endpoint,
    elected,
    lost,
    stop: async () => {
      abort.abort();
      engine?.stop();
      engine = null;
      await new Promise<void>((r) => server.tryShutdown(() => r()));
      await leadership?.resign().catch(() => {});
      await rest.close();
    },
  };
}

function newRecord(volume: string, node: string, callback: string, failedTarget: string): SwitchOverSpec {
  return {
    callback_uri: callback,
    node_name: node,
    volume,
    operation: { operation: 'Init', result: null },
    timestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    existing_nqn: failedTarget,
    new_path: null,
    retry_count: 0,
    reuse_existing: false,
    publish_context: null,
  };
}

/** The target core serves for a published volume (with its URI), or undefined when there is none. */
function servedTarget(v: Volume) {
  const target = publishedTarget(v);
  return target?.deviceUri ? target : undefined;
}
