import * as grpc from '@grpc/grpc-js';
import type { Etcd3, IKeyValue } from 'etcd3';
import { castGrpcError, isRecoverableError } from 'etcd3/lib/errors.js';
import { plainGrpcDetail, StorctlError, StoreUnavailableError, UsageError } from '../errors.js';
import { etcdHosts, isEtcdFull, mapEtcdError, shortGrpc, unavailable } from './etcd-errors.js';
import { decodeRangeResponse, encodeRangeRequest, summarizeRangeResponse } from './etcd-range-codec.js';
import {
  leaseToDecimal,
  leaseToHex,
  prefixBounds,
  readTls,
  toCompare,
  toRequestOp,
} from './etcd-requests.js';
import { EtcdWatch, toKeyValue } from './etcd-watch.js';
import { type LeaseHandle, trackedLeaseHandle } from './lease-handle.js';
import type { StoreTlsFiles } from './open.js';
import type {
  EncodedRange,
  KeyValue,
  Lease,
  LeaseOptions,
  RangeOptions,
  RangeResult,
  Store,
  StoreAlarm,
  TxnOpResult,
  TxnRequest,
  TxnResult,
  Watch,
  WatchOptions,
} from './types.js';
import { assertKey, assertLeaseId, assertTtl, checkRange, checkWatch, validateTxn } from './validate.js';

export interface EtcdConnectOptions {
  /** `http://h:p` or `https://h:p` URLs. */
  hosts: string[];
  /** Present (possibly empty) for TLS. */
  tls?: StoreTlsFiles;
  connectTimeoutMs?: number;
  /** Deadline of each unary call. */
  callTimeoutMs?: number;
}

/** Keys per range request: ~1 KiB Mayastor specs keep each response a few MiB. */
const RANGE_PAGE = 2000;

/** How long transient failures (an etcd restart, a dead endpoint) are retried before giving up. */
const RETRY_BUDGET_MS = 1_500;

/**
 * The etcd backend: reads on gRPC channels of its own with etcd's Range decoded here
 * (etcd-range-codec.ts), writes, leases and watches on the etcd3 client's raw RPCs. Fault handling
 * per the verified recipe: no per-host circuit breaker (it left the client unusable for 5 s after
 * one error or an etcd restart), a short retry with backoff, and a deadline on every unary call.
 *
 * Every call goes to one endpoint, the preferred one: at connect the first member to answer, and
 * after a call to it fails for want of an answer, the next one. Any member serves any request, so
 * a member that hangs (a stalled disk, a frozen VM) costs one call, not one call in N for good: a
 * random endpoint per call took core's lease keepalives to a frozen member of three and core down.
 */
export class EtcdStore implements Store {
  readonly backend = 'etcd' as const;
  readonly endpoint: string;
  private readonly watches = new Set<EtcdWatch>();
  private readonly leases = new Set<LeaseHandle>();

  /**
   * gRPC channels for the reads (get, range, revision), one per endpoint: etcd's Range decoded by
   * lib/store/etcd-range-codec.ts. The etcd3 client, for writes, leases and watches, is loaded on
   * first use: a command that only reads never loads it (~50 ms of every CLI start).
   */
  private channels: grpc.Client[] | undefined;
  /** An etcd3 client per endpoint, made on first use. */
  private readonly clients: (Promise<Etcd3> | undefined)[] = [];
  /** Index in `hosts` of the endpoint calls go to. */
  private preferred = 0;

  private constructor(
    private readonly makeClient: (host: string) => Promise<Etcd3>,
    private readonly makeChannels: () => grpc.Client[],
    readonly hosts: string[],
    secure: boolean,
    private readonly callTimeoutMs: number,
  ) {
    this.endpoint = `${secure ? 'etcd+https' : 'etcd'}://${hosts.map((h) => h.replace(/^https?:\/\//, '')).join(',')}`;
  }

  /** The endpoints as host:port list, for messages. */
  get where(): string {
    return etcdHosts(this.endpoint);
  }

  /** The preferred endpoint's etcd3 client. */
  private client(): Promise<Etcd3> {
    const i = this.preferred;
    this.clients[i] ??= this.makeClient(this.hosts[i]);
    return this.clients[i];
  }

  /** A call to endpoint `used` got no answer: the next call goes to the next endpoint. */
  private failedOver(used: number): void {
    if (this.preferred === used && this.hosts.length > 1) this.preferred = (used + 1) % this.hosts.length;
  }

  /** One unary RPC on an endpoint's channel (the preferred one), its request and answer as bytes. */
  private unary(
    path: string,
    request: Uint8Array,
    timeoutMs = this.callTimeoutMs,
    host = this.preferred,
  ): Promise<Buffer> {
    if (!this.channels) this.channels = this.makeChannels();
    const channel = this.channels[host];
    return new Promise((resolve, reject) => {
      channel.makeUnaryRequest(
        path,
        (req: Uint8Array) => Buffer.from(req.buffer, req.byteOffset, req.byteLength),
        (res: Buffer) => res,
        request,
        { deadline: Date.now() + timeoutMs },
        (err, res) => (err ? reject(err) : resolve(res!)),
      );
    });
  }

  /** etcd's Range, answered as bytes (retried and mapped like every call). */
  private rangeBytes(request: Parameters<typeof encodeRangeRequest>[0]): Promise<Buffer> {
    const bytes = encodeRangeRequest(request);
    return this.call(() => this.unary('/etcdserverpb.KV/Range', bytes));
  }

  /** Connect and check with one request that etcd answers (StoreUnavailableError otherwise). */
  static async connect(options: EtcdConnectOptions): Promise<EtcdStore> {
    const callTimeoutMs = options.callTimeoutMs ?? 10_000;
    const tls = options.tls ? readTls(options.tls) : undefined;
    const grpcOptions = {
      // A page of large values must fit; grpc-js's default limit is 4 MiB.
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      // HTTP/2's default 64 KiB window stalls etcd after 64 KiB of a prefetched page until this
      // process, busy decoding the previous one, acknowledges it: 8 MiB lets whole pages arrive.
      'grpc-node.flow_control_window': 8 * 1024 * 1024,
      // A member that stops answering (frozen, its host gone) fails its streams within 15 s, so a
      // watch moves on to the next member. etcd refuses pings more often than every 5 s.
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
    };
    const makeClient = async (host: string) => {
      const [{ Etcd3 }, { noop }] = await Promise.all([import('etcd3'), import('cockatiel')]);
      return new Etcd3({
        hosts: [host],
        credentials: tls,
        defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + callTimeoutMs }),
        grpcOptions,
        // No per-host circuit breaker and no client-wide retry: `call` retries, knowing which
        // requests are safe to repeat.
        faultHandling: { host: () => noop, global: noop },
      });
    };
    const makeChannels = () => {
      const credentials = tls
        ? grpc.credentials.createSsl(tls.rootCertificate, tls.privateKey, tls.certChain)
        : grpc.credentials.createInsecure();
      return options.hosts.map(
        (h) => new grpc.Client(h.replace(/^https?:\/\//, ''), credentials, grpcOptions),
      );
    };
    const store = new EtcdStore(makeClient, makeChannels, options.hosts, tls !== undefined, callTimeoutMs);
    const timeoutMs = options.connectTimeoutMs ?? 3_000;
    let timer: NodeJS.Timeout | undefined;
    let answered = false;
    try {
      await Promise.race([
        // Every endpoint at once: the first to answer is the preferred one (a hung one never is).
        Promise.any(
          options.hosts.map(async (_, i) => {
            // a short retry budget: a refused connection should fail the command fast
            await store.call(
              () => store.unary('/etcdserverpb.Maintenance/Status', new Uint8Array(), timeoutMs, i),
              { budgetMs: 500, host: i },
            );
            if (!answered) store.preferred = i;
            answered = true;
          }),
        ).catch((err: AggregateError) => Promise.reject(err.errors[0])),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      await store.close();
      const mapped = mapEtcdError(err, store.endpoint);
      if (mapped instanceof StoreUnavailableError) throw mapped;
      if (mapped instanceof StorctlError && mapped.code === 'STORE_ACCESS_DENIED') throw mapped;
      throw unavailable(
        store.endpoint,
        shortGrpc(err instanceof Error ? err.message : String(err)),
        err,
        store.where,
      );
    } finally {
      clearTimeout(timer);
    }
    return store;
  }

  async get(key: string): Promise<KeyValue | null> {
    assertKey(key);
    const { kvs } = decodeRangeResponse(await this.rangeBytes({ key: Buffer.from(key) }));
    return kvs[0] ?? null;
  }

  async range(prefix: string, options: RangeOptions = {}): Promise<RangeResult> {
    const limit = checkRange(prefix, options);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.pagedRange(prefix, limit, options);
      } catch (err) {
        // The pinned revision was compacted between pages: read again at a newer one.
        if (attempt >= 3 || !String((err as Error).message).includes('required revision has been compacted'))
          throw err;
      }
    }
  }

  async rangeEncoded(prefix: string, options: RangeOptions & { limit: number }): Promise<EncodedRange> {
    const limit = checkRange(prefix, options);
    const { key, range_end } = prefixBounds(prefix, options.startKey, options.endKey);
    const bytes = await this.rangeBytes({ key, rangeEnd: range_end, limit });
    return { bytes, ...summarizeRangeResponse(bytes) };
  }

  /**
   * Large ranges are read in pages pinned to the first page's revision: one consistent snapshot,
   * and no response near gRPC's message size limit.
   */
  private async pagedRange(prefix: string, limit: number, options: RangeOptions): Promise<RangeResult> {
    const { key: first, range_end: rangeEnd } = prefixBounds(prefix, options.startKey, options.endKey);
    let key = first;
    let revision: number | undefined;
    let count: number | undefined;
    const kvs: KeyValue[] = [];
    for (;;) {
      const pageLimit = limit === 0 ? RANGE_PAGE : Math.min(RANGE_PAGE, limit - kvs.length);
      const res = decodeRangeResponse(await this.rangeBytes({ key, rangeEnd, limit: pageLimit, revision }));
      revision ??= res.revision;
      count ??= res.count;
      for (const kv of res.kvs) kvs.push(kv);
      if (!res.more || res.kvs.length === 0) return { kvs, more: false, revision, count };
      if (limit > 0 && kvs.length >= limit) return { kvs, more: true, revision, count };
      key = Buffer.from(`${res.kvs[res.kvs.length - 1].key}\0`);
    }
  }

  async put(key: string, value: string, options: { lease?: string } = {}): Promise<{ revision: number }> {
    assertKey(key);
    if (typeof value !== 'string') throw new UsageError(`put of '${key}' needs a string value`);
    if (options.lease !== undefined) assertLeaseId(options.lease);
    const lease = options.lease && options.lease !== '0' ? leaseToDecimal(options.lease) : undefined;
    const res = await this.call(
      async () => (await this.client()).kv.put({ key: Buffer.from(key), value: Buffer.from(value), lease }),
      { write: true, leaseHex: options.lease },
    );
    return { revision: Number(res.header.revision) };
  }

  async delete(key: string): Promise<{ deleted: number; revision: number }> {
    assertKey(key);
    const res = await this.call(async () => (await this.client()).kv.deleteRange({ key: Buffer.from(key) }), {
      write: true,
    });
    return { deleted: Number(res.deleted), revision: Number(res.header.revision) };
  }

  async deletePrefix(prefix: string): Promise<{ deleted: number; revision: number }> {
    if (typeof prefix !== 'string') throw new UsageError('deletePrefix needs a string prefix');
    const res = await this.call(async () => (await this.client()).kv.deleteRange(prefixBounds(prefix)), {
      write: true,
    });
    return { deleted: Number(res.deleted), revision: Number(res.header.revision) };
  }

  async txn(request: TxnRequest): Promise<TxnResult> {
    const plan = validateTxn(request);
    const leaseOf = [...plan.success, ...plan.failure].find(
      (op) => op.type === 'put' && op.lease && op.lease !== '0',
    );
    const res = await this.call(
      async () =>
        (await this.client()).kv.txn({
          compare: plan.compare.map(toCompare),
          success: plan.success.map(toRequestOp),
          failure: plan.failure.map(toRequestOp),
        }),
      { write: true, leaseHex: leaseOf?.type === 'put' ? leaseOf.lease : undefined },
    );
    const ops = res.succeeded ? plan.success : plan.failure;
    const responses = ops.map((op, i): TxnOpResult => {
      const r = res.responses[i];
      if (op.type === 'get') {
        const kvs: IKeyValue[] = r?.response_range?.kvs ?? [];
        return { kv: kvs.length > 0 ? toKeyValue(kvs[0]) : null };
      }
      if (op.type === 'put') return {};
      return { deleted: Number(r?.response_delete_range?.deleted ?? 0) };
    });
    return { succeeded: res.succeeded, revision: Number(res.header.revision), responses };
  }

  async revision(): Promise<number> {
    return decodeRangeResponse(await this.rangeBytes({ key: Buffer.from([0]), countOnly: true })).revision;
  }

  async grantLease(ttlSeconds: number, options: LeaseOptions = {}): Promise<Lease> {
    assertTtl(ttlSeconds);
    const grantedAt = performance.now();
    const res = await this.call(async () =>
      (await this.client()).leaseClient.leaseGrant({ TTL: ttlSeconds, ID: 0 }),
    );
    return trackedLeaseHandle(
      this.leases,
      leaseToHex(res.ID),
      ttlSeconds,
      {
        keepAlive: (hex) => this.keepAliveOnce(hex, ttlSeconds),
        revoke: (hex) => this.revokeLease(hex),
        put: (hex, key, value) => this.put(key, value, { lease: hex }),
      },
      grantedAt,
      options.keepAlive !== false,
    );
  }

  async revokeLease(id: string): Promise<void> {
    assertLeaseId(id);
    try {
      await this.call(async () => (await this.client()).leaseClient.leaseRevoke({ ID: leaseToDecimal(id) }), {
        leaseHex: id,
      });
    } catch (err) {
      if ((err as { code?: string }).code !== 'LEASE_NOT_FOUND') throw err;
    }
  }

  async endpointHealth(): Promise<{ endpoint: string; error?: string }[]> {
    return Promise.all(
      this.where.split(',').map(async (endpoint, i) => {
        try {
          await this.unary('/etcdserverpb.Maintenance/Status', new Uint8Array(), 2_000, i);
          return { endpoint };
        } catch (err) {
          return { endpoint, error: plainGrpcDetail(shortGrpc((err as Error).message)) };
        }
      }),
    );
  }

  async alarms(): Promise<StoreAlarm[]> {
    const res = await this.call(async () =>
      (await this.client()).maintenance.alarm({ action: 'Get', memberID: 0, alarm: 'None' }),
    );
    return (res.alarms ?? []).map((a) => ({
      member: BigInt(a.memberID).toString(16),
      alarm: String(a.alarm).toUpperCase(),
    }));
  }

  async leaseTimeToLive(id: string): Promise<number> {
    assertLeaseId(id);
    const res = await this.call(
      async () => (await this.client()).leaseClient.leaseTimeToLive({ ID: leaseToDecimal(id) }),
      {
        leaseHex: id,
      },
    );
    const ttl = Number(res.TTL);
    return ttl >= 0 ? ttl : -1;
  }

  async watch(prefix: string, options: WatchOptions = {}): Promise<Watch> {
    const from = checkWatch(prefix, options);
    // An explicit start revision even for "from now", so resuming never depends on the server's header.
    const start = from ?? (await this.revision()) + 1;
    const { key, range_end } = prefixBounds(prefix);
    const endpointClient = () => {
      const used = this.preferred;
      return { etcd: this.client(), failed: () => this.failedOver(used) };
    };
    const w = new EtcdWatch(endpointClient, this.endpoint, key, range_end, start, (closed) =>
      this.watches.delete(closed),
    );
    this.watches.add(w);
    await w.start();
    return w;
  }

  async compact(revision: number): Promise<void> {
    if (!Number.isInteger(revision) || revision < 1)
      throw new UsageError(`compact revision must be >= 1, got ${revision}`);
    try {
      await this.call(async () => (await this.client()).kv.compact({ revision, physical: true }));
    } catch (err) {
      const message = (err as Error).message ?? '';
      if (message.includes('required revision has been compacted')) return; // already compacted that far
      if (err instanceof UsageError) {
        throw new UsageError(`cannot compact to revision ${revision}: the store is not there yet`, {
          cause: err,
        });
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    for (const w of [...this.watches]) await w.close();
    for (const l of [...this.leases]) l.release();
    for (const c of this.clients) if (c) (await c).close();
    for (const c of this.channels ?? []) c.close();
  }

  /**
   * One keepalive round trip: true while the lease exists. One that gets no answer is tried again
   * (on the next endpoint) for up to a third of the TTL.
   */
  private async keepAliveOnce(hex: string, ttlSeconds: number): Promise<boolean> {
    const deadline = Date.now() + Math.max(1_000, (ttlSeconds * 1000) / 3);
    for (;;) {
      try {
        return await this.keepAliveRoundTrip(hex, ttlSeconds);
      } catch (err) {
        if (!(err instanceof StoreUnavailableError) || Date.now() + 50 >= deadline) throw err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /**
   * A keepalive's answer must come within a quarter of the TTL (1.5-5 s): time to try the next
   * endpoint, and not so short that a busy machine's late answer counts as none.
   */
  private async keepAliveRoundTrip(hex: string, ttlSeconds: number): Promise<boolean> {
    const used = this.preferred;
    const stream = await this.call(async () => (await this.client()).leaseClient.leaseKeepAlive(), {
      leaseHex: hex,
    });
    return new Promise<boolean>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          stream.cancel();
          this.failedOver(used);
          reject(unavailable(this.endpoint, 'lease keepalive got no answer', undefined, this.where));
        },
        Math.max(1_500, Math.min(5_000, (ttlSeconds * 1000) / 4)),
      );
      stream.on('data', (res) => {
        clearTimeout(timer);
        stream.end();
        resolve(Number(res.TTL) > 0);
      });
      stream.on('error', (err) => {
        clearTimeout(timer);
        reject(mapEtcdError(err, this.endpoint, hex));
      });
      stream.write({ ID: leaseToDecimal(hex) });
    });
  }

  /**
   * Run one RPC on the preferred endpoint (or `host`), retrying transient failures for up to
   * RETRY_BUDGET_MS; one that went unanswered moves the preferred endpoint on. A write is repeated
   * only when it surely never reached etcd: repeating a compare-and-swap that did commit would
   * report it as failed.
   */
  private async call<T>(
    fn: () => Promise<T>,
    options: { write?: boolean; leaseHex?: string; budgetMs?: number; host?: number } = {},
  ): Promise<T> {
    const deadline = Date.now() + (options.budgetMs ?? RETRY_BUDGET_MS);
    // A call that went unanswered is tried once on each other endpoint, past the budget: the
    // attempt may have spent a whole deadline on a member that hangs.
    let otherHosts = options.host === undefined ? this.hosts.length - 1 : 0;
    for (let backoff = 50; ; backoff = Math.min(backoff * 2, 500)) {
      let err: unknown;
      const used = options.host ?? this.preferred;
      try {
        return await fn();
      } catch (raw) {
        err = raw instanceof Error && raw.constructor === Error ? castGrpcError(raw) : raw;
      }
      const transient = err instanceof Error && isRecoverableError(err) && !isEtcdFull(err.message);
      const unsent = transient && neverSent(err as Error);
      if (transient) this.failedOver(used);
      const delay = unsent ? 20 : backoff;
      const elsewhere = transient && this.preferred !== used && otherHosts-- > 0;
      if (!transient || (options.write && !unsent) || (Date.now() + delay > deadline && !elsewhere)) {
        if (transient && options.write && !unsent) {
          throw unavailable(
            this.endpoint,
            `${shortGrpc((err as Error).message)}; the write may or may not have been applied`,
            err,
            this.where,
          );
        }
        throw mapEtcdError(err, this.endpoint, options.leaseHex);
      }
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** gRPC failures that prove the request was never sent to etcd. */
function neverSent(err: Error): boolean {
  return /No connection established|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|LB pick|name resolution/i.test(
    err.message,
  );
}
