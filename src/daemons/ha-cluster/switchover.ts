import { status } from '@grpc/grpc-js';
import { eventKey, makeEvent } from '../../lib/catalog/events.js';
import { HaNodeClient, type SwitchoverProgress } from '../../lib/ha/clients.js';
import type { Logger } from '../../lib/logger.js';
import { recordSwitchover } from '../../lib/metrics/switchover.js';
import type { RestClient } from '../../lib/rest/client.js';
import { RestError } from '../../lib/rest/errors.js';
import type { Volume } from '../../lib/rest/types.js';
import type { SwitchOverSpec, SwitchOverStage } from '../../lib/specs/index.js';
import type { KeySpace } from '../../lib/store/keys.js';
import type { TxnOp } from '../../lib/store/types.js';
import { type StoredSwitchOver, type SwitchOverRecords, stageName, stageOf } from './records.js';

export interface SwitchoverConfig {
  /** Stages run at once across volumes. */
  workers: number;
  /** Wait after a failed attempt before the next (upstream: 10 s). */
  retryDelayMs: number;
  /** Failed attempts of one stage after which the switchover ends Errored. */
  maxRetries: number;
}

export const SWITCHOVER_DEFAULTS: SwitchoverConfig = { workers: 8, retryDelayMs: 10_000, maxRetries: 18 };

const NEXT: Record<string, SwitchOverStage> = {
  Init: 'RepublishVolume',
  RepublishVolume: 'ReplacePath',
  ReplacePath: 'DeleteTarget',
  DeleteTarget: 'Successful',
};

/** An error after which retrying cannot help: the switchover ends Errored at once. */
class Permanent extends Error {}

interface Entry {
  rec: StoredSwitchOver;
  /** A stage is being carried out right now. */
  inStage: boolean;
  cancelled: boolean;
  lastMessage: string;
  targetNode: string;
  listeners: Set<(p: SwitchoverProgress) => void>;
  startedAt: number;
}

/** Simple counting semaphore: at most `n` stages run at once. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(n: number) {
    this.free = n;
  }
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((r) => this.waiting.push(r));
    return () => {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    };
  }
}

/**
 * The switchover state machine (docs/ha.md; Mayastor's, docs/mayastor-compat.md §3.4): Init →
 * RepublishVolume → ReplacePath → DeleteTarget → Successful, or Errored. Each stage is recorded
 * before it is carried out, and every stage can run again after a crash without doing its work
 * twice: RepublishVolume adopts a target that already moved, ReplacePath and DeleteTarget are
 * idempotent. So a restarted ha-cluster resumes every record from the store and finishes each
 * exactly once.
 */
export class SwitchoverEngine {
  private readonly entries = new Map<string, Entry>();
  private readonly slots: Slots;
  private stopped = false;

  constructor(
    private readonly o: {
      records: SwitchOverRecords;
      rest: RestClient;
      space: KeySpace;
      config: SwitchoverConfig;
      log: Logger;
      /** Where a node's agent answers now (it registers again on a new port after a restart). */
      agentEndpoint: (node: string) => string | undefined;
    },
  ) {
    this.slots = new Slots(o.config.workers);
  }

  /** Resume every unfinished record found in the store; an Errored one stays listed until cancelled. */
  async resume(): Promise<number> {
    const all = await this.o.records.loadAll();
    let n = 0;
    for (const rec of all) {
      const stage = stageName(stageOf(rec.spec));
      if (stage === 'Errored') {
        this.entries.set(rec.spec.volume, this.entry(rec));
        continue;
      }
      this.track(rec);
      n++;
    }
    return n;
  }

  /** Whether the volume's last switchover ended Errored (its record stays until replaced or cancelled). */
  errored(volume: string): boolean {
    const e = this.entries.get(volume);
    return !!e && stageName(stageOf(e.rec.spec)) === 'Errored';
  }

  /** Active (not finished) switchover of the volume, if any. */
  active(volume: string): Entry | undefined {
    const e = this.entries.get(volume);
    return e && stageName(stageOf(e.rec.spec)) !== 'Errored' ? e : undefined;
  }

  private entry(rec: StoredSwitchOver): Entry {
    return {
      rec,
      inStage: false,
      cancelled: false,
      lastMessage: '',
      targetNode: '',
      listeners: new Set(),
      startedAt: Date.now(),
    };
  }

  /**
   * Record a new switchover (compare-and-swap: absent, or replacing a finished Errored record)
   * and start it. Null when another one holds the volume.
   */
  async start(spec: SwitchOverSpec): Promise<Entry | null> {
    const existing = this.entries.get(spec.volume);
    if (existing && stageName(stageOf(existing.rec.spec)) !== 'Errored') return null;
    const stored = await this.o.records.put(spec, existing?.rec.rev ?? 0);
    if (!stored) return null;
    return this.track(stored);
  }

  private track(rec: StoredSwitchOver): Entry {
    const e = this.entry(rec);
    this.entries.set(rec.spec.volume, e);
    void this.drive(e);
    return e;
  }

  /** End a record: refused while a stage runs unless `force`. */
  async cancel(volume: string, force: boolean): Promise<string> {
    const e = this.entries.get(volume);
    if (!e) throw Object.assign(new Error(`no switchover of volume ${volume}`), { code: status.NOT_FOUND });
    const stage = stageName(stageOf(e.rec.spec));
    if (e.inStage && !force)
      throw Object.assign(
        new Error(
          `the switchover of volume ${volume} is carrying out ${stage}; wait, or cancel with --force`,
        ),
        { code: status.FAILED_PRECONDITION },
      );
    e.cancelled = true;
    const current = await this.o.records.get(volume);
    if (current)
      await this.o.records.delete(volume, current.rev, [
        this.event(volume, 'SwitchOverCancelled', `at stage ${stage}${force ? ' (forced)' : ''}`),
      ]);
    this.entries.delete(volume);
    this.notify(e, { done: true, failed: true, message: 'cancelled by an operator' });
    return stage;
  }

  progress(e: Entry, extra: Partial<SwitchoverProgress> = {}): SwitchoverProgress {
    const stage = stageOf(e.rec.spec);
    return {
      volume_id: e.rec.spec.volume,
      stage: stageName(stage),
      retry_count: String(e.rec.spec.retry_count),
      message: typeof stage === 'object' ? stage.Errored : e.lastMessage,
      new_target_uri: e.rec.spec.new_path ?? '',
      target_node: e.targetNode,
      done: false,
      failed: false,
      ...extra,
    };
  }

  private notify(e: Entry, extra: Partial<SwitchoverProgress> = {}): void {
    const p = this.progress(e, extra);
    for (const l of e.listeners) l(p);
  }

  /** An event put, written in the same transaction as the stage it reports (so exactly once). */
  private event(volume: string, action: string, message: string): TxnOp {
    const ev = makeEvent('switchover', volume, action, message);
    return { type: 'put', key: eventKey(this.o.space), value: JSON.stringify(ev) };
  }

  /** Store the record changed by `change`; false when it was changed or removed behind our back. */
  private async save(e: Entry, change: (s: SwitchOverSpec) => void, also: TxnOp[] = []): Promise<boolean> {
    const spec = { ...e.rec.spec };
    change(spec);
    spec.timestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const stored = await this.o.records.put(spec, e.rec.rev, also);
    if (!stored) return false;
    e.rec = stored;
    return true;
  }

  private async drive(e: Entry): Promise<void> {
    const volume = e.rec.spec.volume;
    while (!this.stopped && !e.cancelled) {
      const stage = stageOf(e.rec.spec);
      const name = stageName(stage);
      if (name === 'Errored') return;
      if (name === 'Successful') {
        await this.finish(e);
        return;
      }
      this.notify(e);
      const release = await this.slots.take();
      if (this.stopped || e.cancelled) return release();
      e.inStage = true;
      let next: SwitchOverStage | null = null;
      let failure: Error | null = null;
      try {
        await this.run(e, name);
        next = NEXT[name];
      } catch (err) {
        failure = err as Error;
      } finally {
        e.inStage = false;
        release();
      }
      if (this.stopped || e.cancelled) return;
      try {
        if (next) {
          const to = next;
          const { existing_nqn, node_name } = e.rec.spec;
          const also =
            name === 'Init'
              ? [
                  this.event(
                    volume,
                    'SwitchOverStarted',
                    `target ${existing_nqn} reported by ${node_name || 'an operator'}`,
                  ),
                ]
              : [];
          const advance = (s: SwitchOverSpec) =>
            Object.assign(s, { operation: { operation: to, result: null }, retry_count: 0 });
          if (!(await this.save(e, advance, also))) return this.lost(e);
          e.lastMessage = '';
          continue;
        }
        const msg = failure?.message ?? 'unknown error';
        e.lastMessage = msg;
        const retries = e.rec.spec.retry_count + 1;
        if (failure instanceof Permanent || retries > this.o.config.maxRetries) {
          const why = failure instanceof Permanent ? msg : `${name} failed ${retries} times: ${msg}`;
          const errored = (s: SwitchOverSpec) =>
            Object.assign(s, { operation: { operation: { Errored: why }, result: false } });
          if (!(await this.save(e, errored, [this.event(volume, 'SwitchOverFailed', why)])))
            return this.lost(e);
          this.o.log.error({ volume, stage: name, err: why }, 'switchover failed');
          recordSwitchover('failed', (Date.now() - e.startedAt) / 1000);
          this.notify(e, { done: true, failed: true });
          return;
        }
        this.o.log.warn(
          { volume, stage: name, err: msg, retry: retries },
          'switchover stage failed; retrying',
        );
        if (!(await this.save(e, (s) => Object.assign(s, { retry_count: retries })))) return this.lost(e);
        this.notify(e);
        await new Promise((r) => setTimeout(r, this.o.config.retryDelayMs));
      } catch (err) {
        // The store is unreachable: keep the record as it is in memory and try again later.
        this.o.log.warn(
          { volume, err: (err as Error).message },
          'cannot record switchover progress; retrying',
        );
        await new Promise((r) => setTimeout(r, this.o.config.retryDelayMs));
      }
    }
  }

  private lost(e: Entry): void {
    this.o.log.warn({ volume: e.rec.spec.volume }, 'switchover record changed elsewhere; leaving it');
    this.entries.delete(e.rec.spec.volume);
  }

  private async finish(e: Entry): Promise<void> {
    const { volume } = e.rec.spec;
    const completed = this.event(
      volume,
      'SwitchOverCompleted',
      `target ${e.rec.spec.new_path ?? '?'}${e.targetNode ? ` on node ${e.targetNode}` : ''}`,
    );
    for (;;) {
      try {
        if (!(await this.o.records.delete(volume, e.rec.rev, [completed]))) return this.lost(e);
        break;
      } catch (err) {
        if (this.stopped) return;
        this.o.log.warn(
          { volume, err: (err as Error).message },
          'cannot remove the finished switchover; retrying',
        );
        await new Promise((r) => setTimeout(r, this.o.config.retryDelayMs));
      }
    }
    this.entries.delete(volume);
    const ms = Date.now() - e.startedAt;
    this.o.log.info({ volume, target: e.rec.spec.new_path, ms }, 'switchover done');
    recordSwitchover('succeeded', ms / 1000);
    this.notify(e, { stage: 'Successful', done: true });
  }

  private async run(e: Entry, stage: string): Promise<void> {
    const spec = e.rec.spec;
    switch (stage) {
      case 'Init':
        return; // its event is written with the move to RepublishVolume
      case 'RepublishVolume':
        return this.republish(e);
      case 'ReplacePath':
        return this.replacePath(e);
      case 'DeleteTarget':
        await this.rest(() =>
          this.o.rest.call('DELETE', `/volumes/${encodeURIComponent(spec.volume)}/shutdown_targets`),
        );
        return;
    }
  }

  private async rest<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof RestError && (err.kind === 'NotFound' || err.kind === 'NotPublished'))
        throw new Permanent(err.message);
      throw err;
    }
  }

  /**
   * Move the target unless it already moved away from the failed one (this stage ran before a
   * crash, or someone else moved it): then adopt where it is now.
   */
  private async republish(e: Entry): Promise<void> {
    const spec = e.rec.spec;
    const v = await this.rest(() => this.o.rest.getVolume(spec.volume));
    const target = publishedTarget(v);
    // Core's republish tears the old target down before it builds the new one; when no node could
    // build it (every io-engine down), an attempt of ours (recorded before it is made, so a restarted
    // ha-cluster knows it too) left the volume unpublished: publish it again once a node can, rather
    // than end here and leave the attached volume without a target.
    const ours = !target && spec.republish_attempted === true;
    if (!target && !ours) throw new Permanent(`volume ${spec.volume} is not published`);
    let uri = target?.deviceUri ?? '';
    let node = target?.node ?? '';
    const moved =
      uri && uri !== spec.existing_nqn && target?.state !== 'Shutdown' && target?.state !== 'Faulted';
    if (!moved) {
      if (
        !spec.republish_attempted &&
        !(await this.save(e, (s) => Object.assign(s, { republish_attempted: true })))
      )
        throw new Permanent('the switchover record was changed elsewhere');
      const out = await this.rest(() =>
        this.o.rest.publishVolume(spec.volume, {
          protocol: 'nbd',
          republish: !ours,
          node: spec.target_node,
          frontend_node: spec.node_name || undefined,
          publish_context: spec.publish_context ?? {},
        }),
      );
      uri = out.state.target?.deviceUri ?? '';
      node = out.state.target?.node ?? '';
      if (!uri) throw new Error(`core republished volume ${spec.volume} but reports no target URI`);
    }
    e.targetNode = node;
    if (!(await this.save(e, (s) => Object.assign(s, { new_path: uri }))))
      throw new Permanent('the switchover record was changed elsewhere');
  }

  private async replacePath(e: Entry): Promise<void> {
    const spec = e.rec.spec;
    if (!spec.new_path) throw new Error('no new target recorded; RepublishVolume must run first');
    if (!spec.callback_uri) return; // no node agent watches this volume's path: nothing to re-point
    // The agent that reported the path may have restarted since, on another port: ask the one the
    // node registered last (the recorded address is only a fallback, e.g. after our own restart).
    const endpoint = (spec.node_name && this.o.agentEndpoint(spec.node_name)) || spec.callback_uri;
    const node = new HaNodeClient(endpoint);
    try {
      await node.replacePath(spec.volume, spec.new_path, spec.publish_context ?? {});
    } catch (err) {
      const code = (err as { code?: number }).code;
      // The volume is not attached on that node any more: there is no path to re-point.
      if (code === status.FAILED_PRECONDITION) return;
      throw new Error(`ReplacePath on ${endpoint}: ${(err as Error).message}`);
    } finally {
      node.close();
    }
  }

  stop(): void {
    this.stopped = true;
  }
}

/**
 * The target of a published volume, also when it is not served now (its io-engine died, or
 * restarted without it): moving it is then what helps. Undefined when the volume is not published.
 */
export function publishedTarget(v: Volume) {
  return v.spec.target ? v.state.target : undefined;
}
