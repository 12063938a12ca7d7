import * as grpc from '@grpc/grpc-js';
import { loadProto, lookupService } from '../../lib/grpc/proto.js';

/** Client of the csi-node's NodeFs service (proto/csi-node-fs.proto): freeze / unfreeze a filesystem. */

type Call = (
  req: unknown,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => void;

let NodeFs: grpc.ServiceClientConstructor | undefined;

export class NodeFsClient {
  private readonly client: grpc.Client;

  constructor(
    endpoint: string,
    private readonly timeoutMs: number,
  ) {
    NodeFs ??= lookupService(loadProto('csi-node-fs.proto'), 'storctl.csinode.v1.NodeFs');
    this.client = new NodeFs(endpoint, grpc.credentials.createInsecure());
  }

  private invoke<T>(method: string, req: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      (this.client as unknown as Record<string, Call>)[method].call(
        this.client,
        req,
        { deadline: Date.now() + this.timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res as T)),
      );
    });
  }

  /** The node thaws by itself when no Unfreeze comes within `thawAfterMs`. */
  freeze(volumeId: string, thawAfterMs: number): Promise<unknown> {
    return this.invoke('Freeze', { volume_id: volumeId, timeout_ms: thawAfterMs });
  }

  unfreeze(volumeId: string): Promise<{ was_frozen: boolean }> {
    return this.invoke('Unfreeze', { volume_id: volumeId });
  }

  close(): void {
    this.client.close();
  }
}
