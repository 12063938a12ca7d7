import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/**
 * RECORDED FIXTURE, not a Kubernetes API server (none runs on the test machine): a real HTTP server
 * answering the two list endpoints `storctl orphans` reads, GET /api/v1/persistentvolumes and GET
 * /api/v1/persistentvolumeclaims, with bodies shaped as kube-apiserver v1.30 returns them (kind,
 * apiVersion, metadata.resourceVersion, items; trimmed to the fields that matter). Lists are served
 * in pages of `limit` with metadata.continue, as the API server pages them, and a request without
 * the expected bearer token gets the API server's 401 Status body. With `tls` it serves HTTPS and
 * also accepts a client certificate its CA signed, as kube-apiserver does.
 */
export class RecordedKubeApiFixture {
  pvs: unknown[] = [];
  pvcs: unknown[] = [];
  /** Paths (with query) requested, in order. */
  readonly requests: string[] = [];
  private server!: Server;

  constructor(
    readonly token: string,
    readonly tls?: { ca: string; serverCert: string; serverKey: string },
  ) {}

  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async start(): Promise<void> {
    const handler = (req: IncomingMessage, res: ServerResponse) => {
      this.requests.push(req.url ?? '');
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const byCert = this.tls !== undefined && (req.socket as TLSSocket).authorized === true;
      if (!byCert && req.headers.authorization !== `Bearer ${this.token}`)
        return send(401, {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'Unauthorized',
          reason: 'Unauthorized',
          code: 401,
        });
      const url = new URL(req.url ?? '/', 'http://fixture');
      const lists: Record<string, [string, unknown[]]> = {
        '/api/v1/persistentvolumes': ['PersistentVolumeList', this.pvs],
        '/api/v1/persistentvolumeclaims': ['PersistentVolumeClaimList', this.pvcs],
      };
      const list = lists[url.pathname];
      if (req.method !== 'GET' || !list)
        return send(404, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          reason: 'NotFound',
          code: 404,
        });
      // Pages of `limit` (the client asks 500; `pageSize` below forces several pages for the test).
      const limit = Math.min(Number(url.searchParams.get('limit') ?? 500), this.pageSize);
      const from = Number(url.searchParams.get('continue') ?? 0);
      const items = list[1].slice(from, from + limit);
      const next = from + limit < list[1].length ? String(from + limit) : undefined;
      send(200, {
        kind: list[0],
        apiVersion: 'v1',
        metadata: { resourceVersion: '123456', ...(next ? { continue: next } : {}) },
        items,
      });
    };
    this.server = this.tls
      ? createTlsServer(
          {
            ca: readFileSync(this.tls.ca),
            cert: readFileSync(this.tls.serverCert),
            key: readFileSync(this.tls.serverKey),
            requestCert: true,
            rejectUnauthorized: false,
          },
          handler,
        )
      : createServer(handler);
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
  }

  /** Items per page the fixture serves at most. */
  pageSize = 1;

  async stop(): Promise<void> {
    this.server.close();
    this.server.closeAllConnections();
    await once(this.server, 'close').catch(() => {});
  }

  /** A kubeconfig pointing at this fixture, as `kubectl config view --raw` writes one. */
  kubeconfig(): string {
    return [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    server: ${this.url}`,
      '  name: fixture',
      'contexts:',
      '- context:',
      '    cluster: fixture',
      '    user: orphans-reader',
      '  name: fixture',
      'current-context: fixture',
      'users:',
      '- name: orphans-reader',
      '  user:',
      `    token: ${this.token}`,
      '',
    ].join('\n');
  }
}

/** A bound PV as the external-provisioner creates one for our driver. */
export function recordedPv(volumeId: string, claim: { namespace: string; name: string; uid: string }) {
  return {
    metadata: { name: `pvc-${claim.uid}`, uid: crypto.randomUUID(), resourceVersion: '1001' },
    spec: {
      capacity: { storage: '16Mi' },
      csi: { driver: 'io.openebs.csi-mayastor', volumeHandle: volumeId, fsType: 'ext4' },
      accessModes: ['ReadWriteOnce'],
      claimRef: {
        kind: 'PersistentVolumeClaim',
        namespace: claim.namespace,
        name: claim.name,
        uid: claim.uid,
      },
      persistentVolumeReclaimPolicy: 'Delete',
      storageClassName: 'mayastor-1',
      volumeMode: 'Filesystem',
    },
    status: { phase: 'Bound' },
  };
}

/** A PVC (pending or bound). */
export function recordedPvc(namespace: string, name: string, uid: string, volumeName?: string) {
  return {
    metadata: { name, namespace, uid, resourceVersion: '1002' },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '16Mi' } },
      storageClassName: 'mayastor-1',
      volumeMode: 'Filesystem',
      ...(volumeName ? { volumeName } : {}),
    },
    status: { phase: volumeName ? 'Bound' : 'Pending' },
  };
}
