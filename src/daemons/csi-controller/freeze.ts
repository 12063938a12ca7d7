import { UnaryClient } from '../../lib/grpc/client.js';

/** Client of the csi-node's NodeFs service (proto/csi-node-fs.proto): freeze / unfreeze a filesystem. */
export class NodeFsClient {
  private readonly rpc: UnaryClient;

  constructor(endpoint: string, timeoutMs: number) {
    this.rpc = new UnaryClient('csi-node-fs.proto', 'storctl.csinode.v1.NodeFs', endpoint, timeoutMs);
  }

  /** The node thaws by itself when no Unfreeze comes within `thawAfterMs`. */
  freeze(volumeId: string, thawAfterMs: number): Promise<unknown> {
    return this.rpc.call('Freeze', { volume_id: volumeId, timeout_ms: thawAfterMs });
  }

  unfreeze(volumeId: string): Promise<{ was_frozen: boolean }> {
    return this.rpc.call('Unfreeze', { volume_id: volumeId });
  }

  close(): void {
    this.rpc.close();
  }
}
