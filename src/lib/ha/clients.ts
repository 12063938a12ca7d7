import type * as grpc from '@grpc/grpc-js';
import { UnaryClient } from '../grpc/client.js';

/** Clients of the HA agents' services (proto/ha.proto) and of csi-node's NodePaths. */

export interface FailedPath {
  volume_id: string;
  target_uri: string;
  reason: string;
}

export interface FailedPathStatus {
  volume_id: string;
  status_code: number;
  message: string;
}

export interface SwitchoverProgress {
  volume_id: string;
  stage: string;
  retry_count: string;
  message: string;
  new_target_uri: string;
  target_node: string;
  done: boolean;
  failed: boolean;
}

export interface PathInfo {
  volume_id: string;
  target_uri: string;
  state: 'Good' | 'Suspected' | 'Failed' | 'Replacing';
  consecutive_failures: number;
  last_error: string;
  checked_at_ms: string;
}

export class HaClusterClient {
  private readonly rpc: UnaryClient;

  constructor(endpoint: string, timeoutMs = 5000) {
    this.rpc = new UnaryClient('ha.proto', 'storctl.ha.v1.HaCluster', endpoint, timeoutMs);
  }

  get endpoint(): string {
    return this.rpc.endpoint;
  }

  register(node: string, endpoint: string): Promise<unknown> {
    return this.rpc.call('RegisterNodeAgent', { node, endpoint });
  }

  report(
    node: string,
    endpoint: string,
    failedPaths: FailedPath[],
  ): Promise<{ statuses: FailedPathStatus[] }> {
    return this.rpc.call('ReportFailedPaths', { node, endpoint, failed_paths: failedPaths });
  }

  cancel(volumeId: string, force: boolean): Promise<{ stage: string }> {
    return this.rpc.call('CancelSwitchover', { volume_id: volumeId, force });
  }

  /** Start (or join) a switchover and receive its stages until it ends. */
  switchover(
    volumeId: string,
    toNode: string | undefined,
    deadlineMs: number,
  ): grpc.ClientReadableStream<SwitchoverProgress> {
    const client = this.rpc.client as unknown as Record<
      string,
      (req: unknown, opts: grpc.CallOptions) => grpc.ClientReadableStream<SwitchoverProgress>
    >;
    return client.Switchover.call(
      this.rpc.client,
      { volume_id: volumeId, to_node: toNode ?? '' },
      {
        deadline: Date.now() + deadlineMs,
      },
    );
  }

  close(): void {
    this.rpc.close();
  }
}

export class HaNodeClient {
  private readonly rpc: UnaryClient;

  constructor(endpoint: string, timeoutMs = 15_000) {
    this.rpc = new UnaryClient('ha.proto', 'storctl.ha.v1.HaNode', endpoint, timeoutMs);
  }

  replacePath(
    volumeId: string,
    newTargetUri: string,
    publishContext: Record<string, string>,
  ): Promise<{ target_uri: string }> {
    return this.rpc.call('ReplacePath', {
      volume_id: volumeId,
      new_target_uri: newTargetUri,
      publish_context: publishContext,
    });
  }

  getPaths(): Promise<{ paths: PathInfo[] }> {
    return this.rpc.call('GetPaths', {});
  }

  close(): void {
    this.rpc.close();
  }
}

export interface NodePath {
  volume_id: string;
  target_uri: string;
  probed: boolean;
  ok: boolean;
  error: string;
  probe_ms: number;
  /** The failure is on this node (the path proxy is gone): no switchover can help. */
  local: boolean;
}

/** csi-node's NodePaths (proto/csi-node-paths.proto). */
export class NodePathsClient {
  private readonly rpc: UnaryClient;

  constructor(endpoint: string, timeoutMs = 15_000) {
    this.rpc = new UnaryClient('csi-node-paths.proto', 'storctl.csinode.v1.NodePaths', endpoint, timeoutMs);
  }

  listPaths(probeTimeoutMs: number): Promise<{ paths: NodePath[] }> {
    return this.rpc.call('ListPaths', { probe_timeout_ms: probeTimeoutMs }, probeTimeoutMs + 5000);
  }

  replacePath(volumeId: string, targetUri: string): Promise<unknown> {
    return this.rpc.call('ReplacePath', { volume_id: volumeId, target_uri: targetUri });
  }

  close(): void {
    this.rpc.close();
  }
}
