import * as grpc from '@grpc/grpc-js';
import { loadProto, lookupService } from '../../src/lib/grpc/proto.js';

type Call = (req: unknown, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

/**
 * A CSI client on a unix socket: `await csi.node('NodePublishVolume', {...})`,
 * `await csi.controller('CreateVolume', {...})`.
 */
export class CsiClient {
  private readonly nodeClient: grpc.Client;
  private readonly identityClient: grpc.Client;
  private readonly controllerClient: grpc.Client;

  constructor(socketPath: string, options: grpc.ChannelOptions = {}) {
    const root = loadProto('csi.proto');
    const Node = lookupService(root, 'csi.v1.Node');
    const Identity = lookupService(root, 'csi.v1.Identity');
    const Controller = lookupService(root, 'csi.v1.Controller');
    const creds = grpc.credentials.createInsecure();
    this.nodeClient = new Node(`unix:${socketPath}`, creds, options);
    this.identityClient = new Identity(`unix:${socketPath}`, creds, options);
    this.controllerClient = new Controller(`unix:${socketPath}`, creds, options);
  }

  private invoke<T>(client: grpc.Client, method: string, req: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      (client as unknown as Record<string, Call>)[method].call(client, req, (err, res) =>
        err ? reject(err) : resolve(res as T),
      );
    });
  }

  node<T = Record<string, unknown>>(method: string, req: unknown = {}): Promise<T> {
    return this.invoke<T>(this.nodeClient, method, req);
  }

  identity<T = Record<string, unknown>>(method: string, req: unknown = {}): Promise<T> {
    return this.invoke<T>(this.identityClient, method, req);
  }

  controller<T = Record<string, unknown>>(method: string, req: unknown = {}): Promise<T> {
    return this.invoke<T>(this.controllerClient, method, req);
  }

  close(): void {
    this.nodeClient.close();
    this.identityClient.close();
    this.controllerClient.close();
  }
}

/** A NodePublishVolume request for an S3 bucket volume. */
export function publishRequest(o: {
  volumeId: string;
  target: string;
  bucket?: string;
  readonly?: boolean;
  mode?: string;
  mountFlags?: string[];
  context?: Record<string, string>;
  secrets?: Record<string, string>;
}) {
  return {
    volume_id: o.volumeId,
    target_path: o.target,
    readonly: o.readonly ?? false,
    volume_capability: {
      mount: { mount_flags: o.mountFlags ?? [] },
      access_mode: { mode: o.mode ?? 'MULTI_NODE_MULTI_WRITER' },
    },
    volume_context: { ...(o.bucket !== undefined ? { bucketName: o.bucket } : {}), ...o.context },
    secrets: o.secrets ?? {},
  };
}

/** A NodeStageVolume request for a block volume (the csi-node): `uri` is the nbd:// target. */
export function stageRequest(o: {
  volumeId: string;
  staging: string;
  uri: string;
  fsType?: string;
  block?: boolean;
  mode?: string;
}) {
  return {
    volume_id: o.volumeId,
    staging_target_path: o.staging,
    publish_context: { uri: o.uri },
    volume_capability: {
      ...(o.block ? { block: {} } : { mount: { fs_type: o.fsType ?? 'ext4', mount_flags: [] } }),
      access_mode: { mode: o.mode ?? 'SINGLE_NODE_WRITER' },
    },
    volume_context: {},
    secrets: {},
  };
}

/** The csi-node's NodeFs service (proto/csi-node-fs.proto) on host:port. */
export class NodeFsClient {
  private readonly client: grpc.Client;

  constructor(endpoint: string) {
    const NodeFs = lookupService(loadProto('csi-node-fs.proto'), 'storctl.csinode.v1.NodeFs');
    this.client = new NodeFs(endpoint, grpc.credentials.createInsecure());
  }

  call<T = Record<string, unknown>>(method: 'Freeze' | 'Unfreeze', req: unknown): Promise<T> {
    return new Promise((resolve, reject) => {
      (this.client as unknown as Record<string, Call>)[method].call(this.client, req, (err, res) =>
        err ? reject(err) : resolve(res as T),
      );
    });
  }

  close(): void {
    this.client.close();
  }
}
