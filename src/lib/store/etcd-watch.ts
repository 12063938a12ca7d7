import { EventEmitter } from 'node:events';
import type { Etcd3, IDuplexStream, IKeyValue, IWatchRequest, IWatchResponse } from 'etcd3';
import { StorctlError, StoreUnavailableError } from '../errors.js';
import { mapEtcdError, unavailable } from './etcd-errors.js';
import type { KeyValue, Watch, WatchEvent } from './types.js';

const MIN_BACKOFF_MS = 50;
const MAX_BACKOFF_MS = 1_000;
const CREATE_TIMEOUT_MS = 5_000;

export function toKeyValue(kv: IKeyValue): KeyValue {
  return {
    key: kv.key.toString('utf8'),
    value: kv.value.toString('utf8'),
    createRevision: Number(kv.create_revision),
    modRevision: Number(kv.mod_revision),
    version: Number(kv.version),
    lease: BigInt(kv.lease || '0').toString(16),
  };
}

/**
 * A prefix watch on its own gRPC stream. etcd3's Watcher resumes from the header revision of the
 * create response, which can skip history that was still being replayed; this one resumes from
 * the revision after the last event it delivered, so every event arrives exactly once, in order,
 * across reconnects. etcd never splits one revision's events across responses.
 */
export class EtcdWatch extends EventEmitter implements Watch {
  lastRevision: number;
  private nextRevision: number;
  private stream: IDuplexStream<IWatchRequest, IWatchResponse> | undefined;
  private closed = false;
  private backoffMs = MIN_BACKOFF_MS;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** Responses held back until the creator of the watch had a chance to attach listeners. */
  private held: IWatchResponse[] | undefined = [];

  constructor(
    /** The client of the store's preferred endpoint, and how to say that endpoint failed. */
    private readonly endpointClient: () => { etcd: Promise<Etcd3>; failed: () => void },
    private readonly endpoint: string,
    private readonly key: Buffer,
    private readonly rangeEnd: Buffer,
    startRevision: number,
    private readonly onClose: (w: EtcdWatch) => void,
  ) {
    super();
    this.nextRevision = startRevision;
    this.lastRevision = startRevision - 1;
  }

  /**
   * Resolves once etcd accepted the watch. Unreachable endpoints are retried (an endpoint that failed
   * hands over to the next) until CREATE_TIMEOUT_MS; other failures reject at once (mapped).
   */
  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      const deadline = Date.now() + CREATE_TIMEOUT_MS;
      const timer = setTimeout(() => {
        void this.close();
        reject(
          unavailable(this.endpoint, `a watch was not accepted within ${CREATE_TIMEOUT_MS} ms`, undefined),
        );
      }, CREATE_TIMEOUT_MS);
      const onCreated = (err?: unknown) => {
        if (this.closed) return;
        const mapped = err === undefined ? undefined : mapEtcdError(err, this.endpoint);
        if (mapped instanceof StoreUnavailableError && Date.now() + MIN_BACKOFF_MS < deadline) {
          setTimeout(() => this.connect(onCreated), MIN_BACKOFF_MS);
          return;
        }
        clearTimeout(timer);
        if (mapped) {
          void this.close();
          reject(mapped);
          return;
        }
        resolve();
        // `await watch()` resumes in a microtask; listeners are attached before this runs.
        setImmediate(() => {
          const held = this.held ?? [];
          this.held = undefined;
          for (const res of held) this.onResponse(res);
        });
      };
      this.connect(onCreated);
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    this.dropStream();
    this.onClose(this);
  }

  private connect(onCreated?: (err?: unknown) => void): void {
    const { etcd, failed } = this.endpointClient();
    // A stream that breaks unasked (its member died, or stopped answering keepalive pings) moves
    // the store on to the next endpoint: the watch resumes there.
    const failedIfUnreachable = (err: unknown) => {
      if (mapEtcdError(err, this.endpoint) instanceof StoreUnavailableError) failed();
    };
    etcd
      .then((client) => client.watchClient.watch())
      .then((stream) => {
        if (this.closed) {
          stream.cancel();
          return;
        }
        this.stream = stream;
        let created = false;
        stream.on('data', (res: IWatchResponse) => {
          if (stream !== this.stream) return;
          if (res.created && !created) {
            created = true;
            this.backoffMs = MIN_BACKOFF_MS;
            onCreated?.();
          }
          this.onResponse(res);
        });
        const broken = (err: unknown) => {
          if (stream !== this.stream) return;
          failedIfUnreachable(err);
          this.dropStream();
          if (!created && onCreated) onCreated(err);
          else this.reconnectLater();
        };
        stream.on('error', broken);
        stream.on('end', () => broken(new Error('watch stream ended')));
        stream.write({
          create_request: {
            key: this.key,
            range_end: this.rangeEnd,
            start_revision: this.nextRevision,
            prev_kv: true,
          },
        });
      })
      .catch((err) => {
        failedIfUnreachable(err);
        if (onCreated) onCreated(err);
        else this.reconnectLater();
      });
  }

  private reconnectLater(): void {
    if (this.closed) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.reconnectTimer = setTimeout(() => this.connect(), delay);
  }

  private dropStream(): void {
    const stream = this.stream;
    this.stream = undefined;
    if (stream) {
      stream.on('error', () => undefined); // the cancel itself reports CANCELLED
      stream.cancel();
    }
  }

  private onResponse(res: IWatchResponse): void {
    if (this.closed) return;
    if (this.held) {
      this.held.push(res);
      return;
    }
    if (res.compact_revision && res.compact_revision !== '0') {
      this.emit('compacted', Number(res.compact_revision));
      void this.close();
      return;
    }
    if (res.canceled) {
      // Cancelled by the server for another reason: start over from where we are.
      if (this.listenerCount('error') > 0) {
        this.emit(
          'error',
          new StorctlError('WATCH_CANCELED', `etcd cancelled a watch: ${res.cancel_reason || 'no reason'}`),
        );
      }
      this.dropStream();
      this.reconnectLater();
      return;
    }
    const floor = this.nextRevision;
    for (const ev of res.events ?? []) {
      const rev = Number(ev.kv.mod_revision);
      if (rev < floor) continue; // replayed after a reconnect: already delivered
      this.lastRevision = rev;
      this.nextRevision = rev + 1;
      this.emit('event', toWatchEvent(ev.type, ev.kv, ev.prev_kv));
      if (this.closed) return;
    }
  }
}

function toWatchEvent(
  type: string | number,
  kv: IKeyValue,
  prevKv: IKeyValue | undefined | null,
): WatchEvent {
  const prev = prevKv ? toKeyValue(prevKv) : undefined;
  if (type === 'Delete' || type === 1) {
    const ev: WatchEvent = {
      type: 'delete',
      key: kv.key.toString('utf8'),
      modRevision: Number(kv.mod_revision),
    };
    return prev ? { ...ev, prev } : ev;
  }
  return prev ? { type: 'put', kv: toKeyValue(kv), prev } : { type: 'put', kv: toKeyValue(kv) };
}
