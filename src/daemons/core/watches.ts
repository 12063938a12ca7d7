import type { Logger } from '../../lib/logger.js';
import { volumeWatchConfig, watchCallbacks, watchConfig } from '../../lib/specs/index.js';
import { objectKey, parseKey, typePrefix } from '../../lib/store/keys.js';
import type { Watch, WatchEvent } from '../../lib/store/types.js';
import { makeEvent } from './events.js';
import type { Registry } from './registry.js';
import { SvcError } from './svc-error.js';

/** Mayastor's StorableObjectType for watch registrations. */
const WATCH_TYPE = 'WatchConfig';
/** Key ids of volume watches: `WatchConfig/volumes/<uuid>`. */
const VOLUMES = 'volumes/';

/** What a watch looks like through REST (Mayastor RestWatch). */
export interface RestWatch {
  resource: string;
  callback: string;
}

/** What storctl before 0.2 stored under `WatchConfig/<volume-uuid>`; rewritten at load. */
interface LegacyWatches {
  watches: { callback: string }[];
}

const MAX_URL = 2048;
const MAX_PER_VOLUME = 16;
const NOTIFY_TIMEOUT_MS = 2_000;
const NOTIFY_TRIES = 3;

/** A callback URL from the query: absolute http(s), no credentials in it, bounded length. */
export function callbackUrl(raw: string | null): string {
  const bad = (why: string) =>
    new SvcError('InvalidArgument', `invalid 'callback': ${why}`, `query parameter 'callback' ${why}`);
  if (!raw) throw bad('is required (an http:// or https:// URL)');
  if (raw.length > MAX_URL) throw bad(`is longer than ${MAX_URL} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw bad(`'${raw.slice(0, 64)}' is not an absolute URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw bad(`scheme '${u.protocol.slice(0, -1)}' is not allowed; use http or https`);
  if (u.username || u.password) throw bad('must not carry credentials');
  return u.toString();
}

/** A callback as logs and events show it: no query string (it may carry a token). */
function shown(callback: string): string {
  const u = new URL(callback);
  return `${u.origin}${u.pathname}`;
}

/**
 * Volume watches (REST `/watches/volumes/{id}`): callback URLs stored under `WatchConfig/volumes/<volume>`
 * and notified (HTTP POST, best effort, with a timeout) whenever the stored VolumeSpec changes.
 * Changes are taken from a store watch on the VolumeSpec keys, open only while a watch exists, so
 * no operation ever waits on a callback. A deleted volume notifies once and loses its watches.
 */
export class VolumeWatches {
  private readonly byVolume = new Map<string, string[]>();
  private storeWatch: Watch | null = null;
  private opening: Promise<void> | null = null;
  private closed = false;
  /** Per volume+callback: a POST in flight, and whether another change came meanwhile. */
  private readonly inFlight = new Map<string, { again: boolean }>();
  /** POSTs in flight, aborted when core stops. */
  private readonly requests = new Set<AbortController>();
  /** Notifications that got a 2xx answer (tests and logs). */
  delivered = 0;

  constructor(
    private readonly registry: Registry,
    private readonly log: Logger,
  ) {}

  private key(volume: string): string {
    return objectKey(this.registry.space, WATCH_TYPE, `${VOLUMES}${volume}`);
  }

  async load(): Promise<void> {
    const { kvs } = await this.registry.store.range(typePrefix(this.registry.space, WATCH_TYPE));
    for (const kv of kvs) {
      try {
        const { id: keyId } = parseKey(kv.key)!;
        let id: string;
        let urls: string[];
        if (keyId.startsWith(VOLUMES)) {
          id = keyId.slice(VOLUMES.length);
          urls = watchCallbacks(watchConfig.decode(kv.key, kv.value));
        } else {
          // The legacy key and shape: moved to Mayastor's.
          id = keyId;
          urls = (JSON.parse(kv.value) as LegacyWatches).watches.map((w) => w.callback);
          await this.registry.writer.write([], [kv.key]);
          if (urls.length && this.registry.volumes.has(id)) await this.save(id, urls);
        }
        if (urls.length) this.byVolume.set(id, urls);
        // A volume deleted while no watch was open (or a failed cleanup): its watches go now.
        if (!this.registry.volumes.has(id))
          await this.save(id, []).catch((err) =>
            this.log.warn({ volume: id, err: (err as Error).message }, 'watch cleanup failed'),
          );
      } catch (err) {
        this.log.warn({ key: kv.key, err: (err as Error).message }, 'unreadable watch record ignored');
      }
    }
    await this.ensureStoreWatch();
  }

  list(volume: string): RestWatch[] {
    return (this.byVolume.get(volume) ?? []).map((callback) => ({
      resource: `volumes/${volume}`,
      callback,
    }));
  }

  async add(volume: string, callback: string): Promise<void> {
    await this.registry.exclusive('watch', volume, async () => {
      this.registry.volume(volume); // NotFound for an unknown volume
      const have = this.byVolume.get(volume) ?? [];
      if (have.includes(callback))
        throw new SvcError('AlreadyExists', `volume '${volume}' is already watched by ${shown(callback)}`);
      if (have.length >= MAX_PER_VOLUME)
        throw new SvcError('ResourceExhausted', `volume '${volume}' already has ${MAX_PER_VOLUME} watches`);
      await this.save(volume, [...have, callback]);
      await this.registry.persist({ events: [makeEvent('volume', volume, 'WatchAdded', shown(callback))] });
    });
    await this.ensureStoreWatch();
  }

  async remove(volume: string, callback: string): Promise<void> {
    await this.registry.exclusive('watch', volume, async () => {
      const have = this.byVolume.get(volume) ?? [];
      if (!have.includes(callback))
        throw new SvcError('NotFound', `volume '${volume}' has no watch with callback ${shown(callback)}`);
      await this.save(
        volume,
        have.filter((c) => c !== callback),
      );
    });
    if (this.byVolume.size === 0) await this.closeStoreWatch();
  }

  private async save(volume: string, callbacks: string[]): Promise<void> {
    if (callbacks.length === 0) {
      await this.registry.writer.write([], [this.key(volume)]);
      this.byVolume.delete(volume);
      return;
    }
    const value = watchConfig.encode(volumeWatchConfig(volume, callbacks));
    await this.registry.writer.write([{ key: this.key(volume), value }]);
    this.byVolume.set(volume, callbacks);
  }

  private async ensureStoreWatch(): Promise<void> {
    if (this.closed || this.storeWatch || this.byVolume.size === 0) return;
    this.opening ??= (async () => {
      const prefix = typePrefix(this.registry.space, 'VolumeSpec');
      const w = await this.registry.store.watch(prefix);
      w.on('event', (e) => this.onStoreEvent(prefix, e));
      w.on('error', (err) => this.log.warn({ err: err.message }, 'volume watch: store watch error'));
      w.on('compacted', () => {
        // Changes may have been missed: reopen and tell every watcher once.
        this.storeWatch = null;
        void w.close().then(() => this.ensureStoreWatch());
        for (const id of this.byVolume.keys()) this.notifyAll(id, 'put');
      });
      if (this.closed) await w.close();
      else this.storeWatch = w;
    })().finally(() => {
      this.opening = null;
    });
    await this.opening;
  }

  private async closeStoreWatch(): Promise<void> {
    await this.opening;
    const w = this.storeWatch;
    this.storeWatch = null;
    await w?.close();
  }

  private onStoreEvent(prefix: string, e: WatchEvent): void {
    const key = e.type === 'put' ? e.kv.key : e.key;
    const id = key.slice(prefix.length);
    if (!this.byVolume.has(id)) return;
    if (e.type === 'put' && e.prev && e.prev.value === e.kv.value) return;
    this.notifyAll(id, e.type);
    if (e.type === 'delete') {
      // The volume is gone: so are its watches (best effort; a failed write is retried next start).
      void this.registry
        .exclusive('watch', id, () => this.save(id, []))
        .then(() => (this.byVolume.size === 0 ? this.closeStoreWatch() : undefined))
        .catch((err) => this.log.warn({ volume: id, err: (err as Error).message }, 'watch cleanup failed'));
    }
  }

  private notifyAll(volume: string, type: 'put' | 'delete'): void {
    for (const callback of this.byVolume.get(volume) ?? []) this.notify(volume, callback, type);
  }

  /** POST to one callback; changes arriving while one is in flight coalesce into one more POST. */
  private notify(volume: string, callback: string, type: 'put' | 'delete'): void {
    const k = `${volume} ${callback}`;
    const running = this.inFlight.get(k);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: false };
    this.inFlight.set(k, state);
    void (async () => {
      do {
        state.again = false;
        await this.post(volume, callback, type);
      } while (state.again && !this.closed);
      this.inFlight.delete(k);
    })();
  }

  private async post(volume: string, callback: string, type: 'put' | 'delete'): Promise<void> {
    const body = JSON.stringify({ resource: `volumes/${volume}`, type });
    for (let attempt = 1; attempt <= NOTIFY_TRIES && !this.closed; attempt++) {
      const abort = new AbortController();
      this.requests.add(abort);
      const timer = setTimeout(() => abort.abort(), NOTIFY_TIMEOUT_MS);
      try {
        const res = await fetch(callback, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          redirect: 'manual',
          signal: abort.signal,
        });
        await res.body?.cancel().catch(() => {});
        if (res.status >= 200 && res.status < 300) {
          this.delivered++;
          return;
        }
        this.log.debug(
          { volume, callback: shown(callback), status: res.status, attempt },
          'watch callback refused',
        );
      } catch (err) {
        this.log.debug(
          { volume, callback: shown(callback), err: (err as Error).message, attempt },
          'watch callback failed',
        );
      } finally {
        clearTimeout(timer);
        this.requests.delete(abort);
      }
      if (attempt < NOTIFY_TRIES && !this.closed)
        await new Promise((r) => setTimeout(r, 200 * attempt).unref());
    }
    if (this.closed) return;
    this.log.warn(
      { volume, callback: shown(callback) },
      'watch callback not delivered; giving up on this change',
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const r of this.requests) r.abort();
    await this.closeStoreWatch();
  }
}
