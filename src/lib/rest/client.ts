import type { Agent } from 'undici';
import { ServiceUnavailableError, TimeoutError } from '../errors.js';
import { CLUSTER_HEADER } from './endpoint.js';
import { nextStep, OtherClusterError, RestError } from './errors.js';
import type {
  CreateVolumeRequest,
  Nexus,
  Node,
  Pool,
  PublishRequest,
  Replica,
  Volume,
  VolumeSnapshot,
} from './types.js';

export interface RestClientOptions {
  /** Per-request timeout (Mayastor's REST default is 5 s; long operations get more). */
  timeoutMs?: number;
  /**
   * Sees every answer core gives (status and parsed body, before errors are thrown); the REST test
   * suites check each against the OpenAPI document with it. A throw fails the call.
   */
  onResponse?: (r: { method: string; path: string; status: number; body: unknown }) => void;
  /**
   * The key space (`<cluster-id>/<namespace>`) core must serve: an answer naming another one
   * (CLUSTER_HEADER) is an OtherClusterError, for readers that join core's state to a store's.
   */
  cluster?: string;
}

const importUndici = () => import('undici');
type Undici = Awaited<ReturnType<typeof importUndici>>;
let undici: Promise<Undici> | undefined;
let undiciLoaded: Undici | undefined;
/** undici, loaded on the first request: a command that never calls core does not load it (~30 ms). */
function loadUndici(): Promise<Undici> {
  if (!undici)
    undici = importUndici().then((u) => {
      undiciLoaded = u;
      return u;
    });
  return undici;
}

/** `?k=v&…` of the defined query values, or '' when there are none. */
function queryString(query: Record<string, string | number | boolean | undefined> | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/**
 * Client of core's REST API v0 on undici, used by operator commands and (later) the CSI controller
 * and ha-cluster. Error bodies `{details, message, kind}` become RestError with a next step;
 * an unreachable core becomes ServiceUnavailableError naming the URL.
 */
export class RestClient {
  private agent: Agent | undefined;
  /** The base URL's origin and path prefix, parsed on the first call (a bad URL fails that call). */
  private target: { origin: string; prefix: string } | undefined;
  private readonly timeoutMs: number;
  private readonly onResponse: RestClientOptions['onResponse'];
  private readonly cluster: string | undefined;

  constructor(
    readonly baseUrl: string,
    options: RestClientOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.onResponse = options.onResponse;
    this.cluster = options.cluster;
  }

  async close(): Promise<void> {
    await this.agent?.close();
  }

  async call<T>(
    method: 'GET' | 'PUT' | 'DELETE' | 'POST',
    path: string,
    body?: unknown,
    query?: Record<string, string | number | boolean | undefined>,
  ): Promise<T> {
    if (!this.target) {
      const base = new URL(this.baseUrl);
      this.target = { origin: base.origin, prefix: base.pathname.replace(/\/+$/, '') };
    }
    // The agent is asked directly with origin and path: no URL to build and parse again per request.
    const target = `${this.target.prefix}/v0${path}${queryString(query)}`;
    const { Agent } = undiciLoaded ?? (await loadUndici());
    this.agent ??= new Agent({ connections: 64, pipelining: 1, keepAliveTimeout: 4_000 });
    let res: Awaited<ReturnType<Undici['request']>>;
    try {
      res = await this.agent.request({
        origin: this.target.origin,
        path: target,
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      const e = err as { code?: string; message: string };
      if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT') {
        throw new TimeoutError(`core REST ${method} ${path} did not answer within ${this.timeoutMs} ms`, {
          suggestions: [
            'the operation may still complete; check with `storctl get volumes` or `storctl events`',
          ],
        });
      }
      throw new ServiceUnavailableError('core REST API', this.baseUrl, e.code ?? e.message, {
        suggestions: [
          'start a cluster with `storctl up`',
          'or point at a running core with --rest URL (env STORCTL_REST)',
        ],
      });
    }
    const served = res.headers[CLUSTER_HEADER];
    if (this.cluster !== undefined && served !== this.cluster) {
      await res.body.dump();
      throw new OtherClusterError(
        this.baseUrl,
        typeof served === 'string' ? served : undefined,
        this.cluster,
      );
    }
    const text = await res.body.text();
    if (this.onResponse) {
      let parsed: unknown = text === '' ? undefined : text;
      try {
        parsed = text === '' ? undefined : JSON.parse(text);
      } catch {
        // not JSON: the observer sees the raw text
      }
      this.onResponse({ method, path: target, status: res.statusCode, body: parsed });
    }
    if (res.statusCode >= 400) {
      let parsed: { kind?: string; message?: string; details?: string } = {};
      try {
        parsed = JSON.parse(text);
      } catch {
        // a non-JSON error body (a proxy?): reported as Internal with the raw text
      }
      const kind = parsed.kind ?? 'Internal';
      throw new RestError(
        kind,
        res.statusCode,
        parsed.message ?? (text || `HTTP ${res.statusCode}`),
        parsed.details ?? '',
        nextStep(kind, parsed.details),
      );
    }
    return (text ? JSON.parse(text) : undefined) as T;
  }

  // --- volumes ---------------------------------------------------------------------------------------
  async listVolumes(): Promise<Volume[]> {
    const out: Volume[] = [];
    let token: number | undefined;
    do {
      const page = await this.call<{ entries: Volume[]; next_token?: number }>('GET', '/volumes', undefined, {
        max_entries: 500,
        starting_token: token,
      });
      out.push(...page.entries);
      token = page.next_token;
    } while (token !== undefined);
    return out;
  }
  getVolume(id: string) {
    return this.call<Volume>('GET', `/volumes/${encodeURIComponent(id)}`);
  }
  createVolume(id: string, body: CreateVolumeRequest) {
    return this.call<Volume>('PUT', `/volumes/${encodeURIComponent(id)}`, body);
  }
  /** `ifUnpublished`: refused (409 InUse, details VolumePublished) while the volume is published. */
  deleteVolume(id: string, { ifUnpublished = false } = {}) {
    return this.call<void>('DELETE', `/volumes/${encodeURIComponent(id)}`, undefined, {
      if_unpublished: ifUnpublished || undefined,
    });
  }
  publishVolume(id: string, body: PublishRequest) {
    return this.call<Volume>('PUT', `/volumes/${encodeURIComponent(id)}/target`, body);
  }
  unpublishVolume(id: string, force = false) {
    return this.call<Volume>('DELETE', `/volumes/${encodeURIComponent(id)}/target`, undefined, {
      force: force || undefined,
    });
  }
  scaleVolume(id: string, replicas: number) {
    return this.call<Volume>('PUT', `/volumes/${encodeURIComponent(id)}/replica_count/${replicas}`);
  }
  resizeVolume(id: string, size: number) {
    return this.call<Volume>('PUT', `/volumes/${encodeURIComponent(id)}/size`, { size });
  }
  createSnapshot(volumeId: string, snapshotId: string) {
    return this.call<VolumeSnapshot>(
      'PUT',
      `/volumes/${encodeURIComponent(volumeId)}/snapshots/${encodeURIComponent(snapshotId)}`,
    );
  }
  deleteSnapshot(snapshotId: string) {
    return this.call<void>('DELETE', `/volumes/snapshots/${encodeURIComponent(snapshotId)}`);
  }
  // --- nodes and pools -----------------------------------------------------------------------------
  listNodes() {
    return this.call<Node[]>('GET', '/nodes');
  }
  getNode(id: string) {
    return this.call<Node>('GET', `/nodes/${encodeURIComponent(id)}`);
  }
  cordonNode(id: string, label: string) {
    return this.call<Node>('PUT', `/nodes/${encodeURIComponent(id)}/cordon/${encodeURIComponent(label)}`);
  }
  uncordonNode(id: string, label: string) {
    return this.call<Node>('DELETE', `/nodes/${encodeURIComponent(id)}/cordon/${encodeURIComponent(label)}`);
  }
  drainNode(id: string, label: string) {
    return this.call<Node>('PUT', `/nodes/${encodeURIComponent(id)}/drain/${encodeURIComponent(label)}`);
  }
  labelNode(id: string, key: string, value: string, overwrite = false) {
    return this.call<Node>(
      'PUT',
      `/nodes/${encodeURIComponent(id)}/label/${encodeURIComponent(key)}=${encodeURIComponent(value)}`,
      undefined,
      { overwrite: overwrite || undefined },
    );
  }
  unlabelNode(id: string, key: string) {
    return this.call<Node>('DELETE', `/nodes/${encodeURIComponent(id)}/label/${encodeURIComponent(key)}`);
  }
  listPools() {
    return this.call<Pool[]>('GET', '/pools');
  }
  createPool(
    node: string,
    id: string,
    body: { disks: string[]; labels?: Record<string, string>; capacity?: number },
  ) {
    return this.call<Pool>('PUT', `/nodes/${encodeURIComponent(node)}/pools/${encodeURIComponent(id)}`, body);
  }
  deletePool(id: string) {
    return this.call<void>('DELETE', `/pools/${encodeURIComponent(id)}`);
  }
  listReplicas() {
    return this.call<Replica[]>('GET', '/replicas');
  }
  deleteReplica(pool: string, id: string) {
    return this.call<void>('DELETE', `/pools/${encodeURIComponent(pool)}/replicas/${encodeURIComponent(id)}`);
  }
  listNexuses() {
    return this.call<Nexus[]>('GET', '/nexuses');
  }
  deleteNexus(id: string) {
    return this.call<void>('DELETE', `/nexuses/${encodeURIComponent(id)}`);
  }
  // --- pages, snapshots, clones and app nodes (the CSI controller) ---------------------------------
  /** One page of volumes: `maxEntries` 0 = all from `startingToken` on. */
  listVolumesPage(maxEntries: number, startingToken?: number) {
    return this.call<{ entries: Volume[]; next_token?: number }>('GET', '/volumes', undefined, {
      max_entries: maxEntries,
      starting_token: startingToken,
    });
  }
  getSnapshot(snapshotId: string) {
    return this.call<VolumeSnapshot>('GET', `/volumes/snapshots/${encodeURIComponent(snapshotId)}`);
  }
  /** One page of snapshots, optionally of one source volume: `maxEntries` 0 = all. */
  listSnapshotsPage(q: { volumeId?: string; maxEntries: number; startingToken?: number }) {
    return this.call<{ entries: VolumeSnapshot[]; next_token?: number }>(
      'GET',
      '/volumes/snapshots',
      undefined,
      { volume_id: q.volumeId, max_entries: q.maxEntries, starting_token: q.startingToken },
    );
  }
  /** A new volume cloned from a snapshot (`PUT /snapshots/{snapshot}/volumes/{volume}`). */
  createCloneVolume(snapshotId: string, volumeId: string, body: CreateVolumeRequest) {
    return this.call<Volume>(
      'PUT',
      `/snapshots/${encodeURIComponent(snapshotId)}/volumes/${encodeURIComponent(volumeId)}`,
      body,
    );
  }
  getAppNode(id: string) {
    return this.call<AppNode>('GET', `/app-nodes/${encodeURIComponent(id)}`);
  }
  registerAppNode(id: string, body: { endpoint: string; labels?: Record<string, string> }) {
    return this.call<void>('PUT', `/app-nodes/${encodeURIComponent(id)}`, body);
  }
  deregisterAppNode(id: string) {
    return this.call<void>('DELETE', `/app-nodes/${encodeURIComponent(id)}`);
  }
}

/** An app node (a CSI node registered with core) as REST `/app-nodes/{id}` shows it. */
export interface AppNode {
  id: string;
  spec: { id: string; endpoint: string; labels?: Record<string, string> };
}
