import { Agent, request } from 'undici';
import { ServiceUnavailableError, StorctlError, TimeoutError } from '../../errors.js';
import type { KubeAccess } from './config.js';

/** The fields of a PersistentVolume and a PersistentVolumeClaim the orphan check reads. */
export interface PersistentVolume {
  metadata: { name: string; uid?: string };
  spec?: {
    csi?: { driver?: string; volumeHandle?: string };
    claimRef?: { namespace?: string; name?: string; uid?: string };
  };
}
export interface PersistentVolumeClaim {
  metadata: { name: string; namespace?: string; uid: string };
  spec?: { volumeName?: string };
}

/** A small read-only client of the Kubernetes API on undici: the two list endpoints, paged. */
export class KubeClient {
  private readonly agent: Agent;

  constructor(
    readonly access: KubeAccess,
    private readonly timeoutMs = 10_000,
  ) {
    this.agent = new Agent({
      connect: {
        ca: access.ca,
        cert: access.cert,
        key: access.key,
        rejectUnauthorized: !access.insecureSkipTlsVerify,
      },
    });
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  listPersistentVolumes(): Promise<PersistentVolume[]> {
    return this.list<PersistentVolume>('/api/v1/persistentvolumes');
  }

  listPersistentVolumeClaims(): Promise<PersistentVolumeClaim[]> {
    return this.list<PersistentVolumeClaim>('/api/v1/persistentvolumeclaims');
  }

  private async list<T>(path: string): Promise<T[]> {
    const items: T[] = [];
    let token: string | undefined;
    do {
      const url = new URL(`${this.access.server}${path}`);
      url.searchParams.set('limit', '500');
      if (token) url.searchParams.set('continue', token);
      const page = await this.get<{ items?: T[]; metadata?: { continue?: string } }>(url);
      items.push(...(page.items ?? []));
      token = page.metadata?.continue || undefined;
    } while (token);
    return items;
  }

  private async get<T>(url: URL): Promise<T> {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(url, {
        method: 'GET',
        dispatcher: this.agent,
        headers: {
          accept: 'application/json',
          ...(this.access.token ? { authorization: `Bearer ${this.access.token}` } : {}),
        },
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
      });
    } catch (err) {
      const e = err as { code?: string; message: string };
      if (e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT')
        throw new TimeoutError(`Kubernetes API ${url.pathname} did not answer within ${this.timeoutMs} ms`);
      throw new ServiceUnavailableError('Kubernetes API', this.access.server, e.code ?? e.message, {
        suggestions: [`check the API server of ${this.access.source}`],
      });
    }
    const text = await res.body.text();
    if (res.statusCode >= 400)
      throw new StorctlError(
        'KUBE_API',
        `Kubernetes API GET ${url.pathname} answered ${res.statusCode}: ${text.slice(0, 300)}`,
        undefined,
        {
          suggestions:
            res.statusCode === 401 || res.statusCode === 403
              ? [
                  `the credentials of ${this.access.source} must allow list on persistentvolumes and persistentvolumeclaims`,
                ]
              : [],
        },
      );
    return JSON.parse(text) as T;
  }
}
