import type { Logger } from '../../lib/logger.js';
import { type BlockBackend, BlockIoError, errnoOf } from '../../lib/nbd/backend.js';
import { Errno } from '../../lib/nbd/protocol.js';
import { precondition, unavailable } from './errors.js';
import type { NexusChild } from './nexus-child.js';
import type { NexusInfo, NexusInfoWriter } from './nexus-info.js';
import { type RebuildRecord, rebuildChild } from './rebuild.js';
import { RebuildMap } from './rebuild-map.js';
import { isReservationConflict } from './reservation.js';
import { UnflushedWrites } from './unflushed-writes.js';

export type NexusState = 'Online' | 'Degraded' | 'Faulted' | 'Shutdown';

interface Span {
  start: number;
  end: number;
  waiters: (() => void)[] | null;
}

const overlaps = (s: Span, start: number, end: number) => s.start < end && start < s.end;

function finish(s: Span): void {
  if (s.waiters) for (const w of s.waiters) w();
}

function waitSpan(s: Span): Promise<void> {
  return new Promise((r) => {
    s.waiters ??= [];
    s.waiters.push(r);
  });
}

/**
 * A nexus: a mirror over children. Writes go to every healthy child (and to rebuilding children for
 * the range already copied) and complete when all have; reads come from one healthy child, round
 * robin. A child whose I/O fails is faulted and dropped, except the last healthy child, which is kept
 * (the I/O fails instead; when its connection was lost, the nexus shuts itself down). Every change of
 * child health is persisted as NexusInfo before the I/O that caused it completes.
 */
export class Nexus implements BlockBackend {
  readonly children: NexusChild[] = [];
  private rr = 0;
  private shutdown = false;
  /** Ranges a rebuild is copying right now: writes to them wait. */
  private readonly locks = new Set<Span>();
  /** Writes in flight: a rebuild segment waits for those overlapping it. */
  private readonly writes = new Set<Span>();
  private readonly rebuilds = new Map<NexusChild, Promise<void>>();
  /** Set while all I/O is held (resize): new I/O waits for it. */
  private hold: Promise<void> | null = null;
  /** I/O requests in flight (reads, writes, flushes): a hold waits for them. */
  private inflight = 0;
  private idleWaiters: (() => void)[] = [];
  /**
   * The NexusInfo write recording a child's fault, while pending: a write that skipped the child is
   * acknowledged only after it, so a restarted nexus never takes the stale child for a healthy one.
   */
  private healthWrite: Promise<boolean> | null = null;
  /** Writes since the newest flush began, and those of flushes still running (UnflushedWrites). */
  private unflushed: UnflushedWrites;
  private readonly flushing = new Set<UnflushedWrites>();
  /** Finished rebuilds, oldest first (bounded), as Mayastor's io-engine keeps its rebuild history. */
  readonly rebuildHistory: RebuildRecord[] = [];
  exportedAs: string | null = null;

  constructor(
    readonly uuid: string,
    readonly name: string,
    /** Grows only, by resize (under the I/O hold). */
    public size: number,
    readonly volumeId: string | null,
    readonly infoWriter: NexusInfoWriter,
    private readonly log: Logger,
  ) {
    this.unflushed = new UnflushedWrites(size);
  }

  get state(): NexusState {
    if (this.shutdown) return 'Shutdown';
    const online = this.onlineCount();
    if (online === 0) return 'Faulted';
    return online === this.children.length ? 'Online' : 'Degraded';
  }

  get isShutdown(): boolean {
    return this.shutdown;
  }

  private onlineCount(): number {
    let n = 0;
    for (const c of this.children) if (c.state === 'Online') n++;
    return n;
  }

  nexusInfo(cleanShutdown = false): NexusInfo {
    return {
      children: this.children.map((c) => ({ uuid: c.uuid, healthy: c.healthy })),
      clean_shutdown: cleanShutdown,
    };
  }

  /** Called when the nexus shut itself down (NexusInfo could not be persisted): unexport it. */
  onSelfShutdown: (() => Promise<void>) | null = null;
  shutdownReason = '';

  /**
   * Persist NexusInfo. If a health change cannot be recorded the nexus shuts itself down (docs/mayastor-compat.md
   * §3.6): serving on with a record that names a stale child healthy could lose data later.
   */
  async persist(cleanShutdown = false): Promise<boolean> {
    try {
      await this.infoWriter.write(this.nexusInfo(cleanShutdown));
      return true;
    } catch (err) {
      this.log.error({ nexus: this.uuid, err: (err as Error).message }, 'NexusInfo could not be persisted');
      if (!cleanShutdown)
        await this.selfShutdown(`NexusInfo could not be persisted: ${(err as Error).message}`);
      return false;
    }
  }

  /** Shut down if core fenced this nexus (a switchover moved the target); true when it did. */
  async checkFenced(): Promise<boolean> {
    if (this.shutdown) return false;
    if (!(await this.infoWriter.isFenced())) return false;
    await this.selfShutdown(
      "fenced: the volume's target was moved to another nexus (NexusInfo do_self_shutdown)",
    );
    return true;
  }

  private async selfShutdown(reason: string): Promise<void> {
    if (this.shutdown) return;
    this.shutdown = true;
    this.shutdownReason = reason;
    this.log.error({ nexus: this.uuid, reason }, 'nexus shut itself down');
    // Not awaited: unexporting waits until the target's requests are answered, and a write that
    // faulted a child (or arrived while its fault was being recorded) is answered only once this
    // shutdown has returned. Awaited, neither would ever finish, nor the children be let go.
    void this.onSelfShutdown?.().catch(() => {});
    for (const c of this.children) await c.detach().catch(() => {});
  }

  /**
   * A child's I/O failed: fault it (and persist) unless it is the last healthy child.
   * Returns true when the caller may retry elsewhere.
   */
  async childFailed(child: NexusChild, err: unknown): Promise<boolean> {
    if (isReservationConflict(err)) {
      // A newer nexus took the replica: the volume's target moved while this one was stalled.
      await this.selfShutdown(
        `fenced: ${(err as Error).message} (the volume's target was moved to another nexus)`,
      );
      return false;
    }
    if (child.state === 'Faulted') return true;
    if (child.state === 'Online' && this.onlineCount() <= 1) {
      // Its connection lost, not its disk: the replica is intact and most likely back soon (its
      // io-engine restarting), but this nexus cannot serve until then. Failing the I/O would fail
      // the application's filesystem; shutting down makes the path proxy hold it while HA builds a
      // new target, from NexusInfo, which still names this child healthy.
      if (child.backend.connectionLost) {
        await this.selfShutdown(
          `the connection to its last healthy child ${child.uri} was lost: ${String(err)}`,
        );
        return false;
      }
      this.log.error(
        { nexus: this.uuid, child: child.uri, err: String(err) },
        'I/O failed on the last healthy child; keeping it',
      );
      return false;
    }
    this.markFaulted(child, err instanceof Error ? err.message : String(err));
    this.log.warn({ nexus: this.uuid, child: child.uri, reason: child.reason }, 'child faulted');
    void child.detach().catch(() => {});
    await this.persistHealth();
    return true;
  }

  /**
   * Take a child out of I/O and start its rebuild map in the same step (no await in between), so
   * every write from now on that the child does not take is logged. A child that was Online has all
   * writes so far; one being fully rebuilt lacks everything from its cursor on; one being partially
   * rebuilt keeps the segments not yet copied back.
   */
  markFaulted(child: NexusChild, reason: string): void {
    const was = child.state;
    child.state = 'Faulted';
    child.reason = reason;
    if (was === 'Faulted') return;
    child.faultedAt = Date.now();
    if (!child.rebuildMap) {
      child.rebuildMap = new RebuildMap(this.size);
      if (was === 'Degraded') child.rebuildMap.mark(child.rebuildCursor, this.size - child.rebuildCursor);
    }
    // Its disk may lack what no flush has made durable there yet (UnflushedWrites): the nexus's
    // writes, and what its rebuild copied.
    const map = child.rebuildMap;
    for (const w of [this.unflushed, ...this.flushing, child.unflushedCopies])
      w?.eachRange((o, l) => map.mark(o, l));
    child.unflushedCopies = null;
  }

  /** Persist a health change; writes acknowledge only once it is stored (see healthWrite). */
  async persistHealth(): Promise<boolean> {
    const p = this.persist();
    this.healthWrite = p;
    try {
      return await p;
    } finally {
      if (this.healthWrite === p) this.healthWrite = null;
    }
  }

  /** What I/O on a nexus that shut itself down answers: NBD_ESHUTDOWN, the path failed, not the volume. */
  private shutdownError(): BlockIoError {
    const why = this.shutdownReason ? `: ${this.shutdownReason}` : '';
    return new BlockIoError(`nexus ${this.uuid} shut down${why}`, Errno.ESHUTDOWN);
  }

  private checkOpen(): void {
    if (this.shutdown) throw this.shutdownError();
  }

  private pickReader(): NexusChild | null {
    const n = this.children.length;
    for (let i = 0; i < n; i++) {
      const c = this.children[(this.rr + i) % n];
      if (c.state === 'Online') {
        this.rr = (this.rr + i + 1) % n;
        return c;
      }
    }
    return null;
  }

  private async waitHold(): Promise<void> {
    while (this.hold) await this.hold;
    this.checkOpen();
  }

  private leave(): void {
    if (--this.inflight === 0 && this.idleWaiters.length > 0) for (const w of this.idleWaiters.splice(0)) w();
  }

  /**
   * Hold all new I/O and wait for the I/O in flight; returns the release. While held, the children
   * can be reconnected and the size changed without any request seeing a half-done change. With
   * `drainMs`, I/O in flight that takes longer to finish (a hung child) ends the hold unheld.
   */
  async holdIo(drainMs?: number): Promise<() => void> {
    while (this.hold) await this.hold;
    let release!: () => void;
    this.hold = new Promise((r) => {
      release = r;
    });
    const free = () => {
      this.hold = null;
      release();
    };
    if (this.inflight === 0) return free;
    let timer: NodeJS.Timeout | undefined;
    const drained = await new Promise<boolean>((r) => {
      this.idleWaiters.push(() => r(true));
      if (drainMs !== undefined) timer = setTimeout(() => r(false), drainMs);
    });
    clearTimeout(timer);
    if (!drained) {
      free();
      throw unavailable(`I/O in flight on nexus '${this.uuid}' did not finish within ${drainMs} ms`);
    }
    return free;
  }

  async read(buf: Buffer, offset: number): Promise<void> {
    this.checkOpen();
    if (this.hold) await this.waitHold();
    this.inflight++;
    try {
      await this.readFromChildren(buf, offset);
    } finally {
      this.leave();
    }
  }

  private async readFromChildren(buf: Buffer, offset: number): Promise<void> {
    for (;;) {
      const child = this.pickReader();
      if (!child) throw new BlockIoError(`nexus ${this.uuid} has no healthy child`);
      try {
        await child.backend.read(buf, offset);
        return;
      } catch (err) {
        if (!(await this.childFailed(child, err)))
          throw this.shutdown
            ? this.shutdownError()
            : new BlockIoError(`read failed on last healthy child ${child.uri}: ${String(err)}`);
      }
    }
  }

  write(buf: Buffer, offset: number, fua: boolean): Promise<void> {
    return this.mutate(offset, buf.length, (b) => b.write(buf, offset, fua));
  }

  trim(offset: number, length: number): Promise<void> {
    return this.mutate(offset, length, (b) => b.trim(offset, length));
  }

  writeZeroes(offset: number, length: number, fua: boolean): Promise<void> {
    return this.mutate(offset, length, (b) => b.writeZeroes(offset, length, fua));
  }

  async flush(): Promise<void> {
    this.checkOpen();
    if (this.hold) await this.waitHold();
    this.inflight++;
    // What this flush makes durable on the children it succeeds on; until then a child that
    // faults gets it logged (markFaulted).
    const covered = this.unflushed;
    this.unflushed = new UnflushedWrites(this.size);
    this.flushing.add(covered);
    let durable = false;
    try {
      const targets = this.children.filter((c) => c.state !== 'Faulted');
      await this.applyAll(targets, (b) => b.flush());
      durable = true;
    } finally {
      this.flushing.delete(covered);
      if (!durable) covered.eachRange((o, l) => this.unflushed.mark(o, l));
      this.leave();
    }
  }

  private async mutate(
    offset: number,
    length: number,
    op: (b: BlockBackend) => Promise<void>,
  ): Promise<void> {
    this.checkOpen();
    if (this.hold) await this.waitHold();
    this.inflight++;
    try {
      await this.mutateInOrder(offset, length, op);
      // A chained NexusInfo write: awaiting the latest covers every earlier one. Not stored: the
      // nexus shut itself down, and the write is not acknowledged.
      if (this.healthWrite && !(await this.healthWrite)) throw this.shutdownError();
    } finally {
      this.leave();
    }
  }

  private async mutateInOrder(
    offset: number,
    length: number,
    op: (b: BlockBackend) => Promise<void>,
  ): Promise<void> {
    const end = offset + length;
    // Overlapping writes run one after the other, so every child applies them in the same order
    // (otherwise two mirrors could end with different bytes); and none enters a range being rebuilt.
    for (;;) {
      if (this.locks.size > 0) await this.waitUnlocked(offset, end);
      const busy = this.findOverlap(this.writes, offset, end);
      if (!busy) break;
      await waitSpan(busy);
    }
    const span: Span = { start: offset, end, waiters: null };
    this.writes.add(span);
    const targets: NexusChild[] = [];
    // undefined: unknown (the write threw), every logging child may lack it
    let failed: NexusChild[] | null | undefined;
    try {
      for (const c of this.children) {
        if (
          c.state === 'Online' ||
          (c.state === 'Degraded' && (c.rebuildPartial || offset < c.rebuildCursor))
        )
          targets.push(c);
      }
      failed = await this.applyAll(targets, op);
    } finally {
      // Log the write for every child with a rebuild map that did not take it, before the span ends:
      // a rebuild step over this range waits for the span, so it sees the mark.
      // A child that faulted while the write ran logs it even if it took it: only a flush would
      // have made it durable there.
      for (const c of this.children) {
        if (
          c.rebuildMap &&
          (c.state === 'Faulted' || failed === undefined || !targets.includes(c) || failed?.includes(c))
        )
          c.rebuildMap.mark(offset, length);
      }
      this.unflushed.mark(offset, length);
      this.writes.delete(span);
      finish(span);
    }
  }

  /**
   * Run `op` on every target; fault the ones that fail; succeed if a healthy child succeeded.
   * Returns the targets that failed (null: none).
   */
  private async applyAll(
    targets: NexusChild[],
    op: (b: BlockBackend) => Promise<void>,
  ): Promise<NexusChild[] | null> {
    if (targets.length === 1 && targets[0].state === 'Online') {
      // the common single-child case without allSettled's allocations
      const c = targets[0];
      try {
        await op(c.backend);
        return null;
      } catch (err) {
        await this.childFailed(c, err);
        if (this.shutdown) throw this.shutdownError();
        throw new BlockIoError(`I/O failed on ${c.uri}: ${String(err)}`, clientErrno(err));
      }
    }
    const results = await Promise.allSettled(targets.map((c) => op(c.backend)));
    let okHealthy = 0;
    let firstError: unknown = null;
    let failed: NexusChild[] | null = null;
    for (let i = 0; i < targets.length; i++) {
      const r = results[i];
      if (r.status === 'fulfilled') {
        if (targets[i].state === 'Online') okHealthy++;
      } else {
        firstError ??= r.reason;
        failed ??= [];
        failed.push(targets[i]);
        await this.childFailed(targets[i], r.reason);
      }
    }
    if (this.shutdown) throw this.shutdownError();
    if (okHealthy === 0)
      throw new BlockIoError(
        `nexus ${this.uuid}: I/O failed on every healthy child: ${String(firstError ?? 'no healthy child')}`,
        clientErrno(firstError),
      );
    return failed;
  }

  private findOverlap(spans: Set<Span>, start: number, end: number): Span | null {
    if (spans.size === 0) return null;
    for (const s of spans) if (overlaps(s, start, end)) return s;
    return null;
  }

  private async waitUnlocked(start: number, end: number): Promise<void> {
    for (;;) {
      let blocking: Span | null = null;
      for (const l of this.locks) {
        if (overlaps(l, start, end)) {
          blocking = l;
          break;
        }
      }
      if (!blocking) return;
      await waitSpan(blocking);
    }
  }

  /** Block writes to [start, end) and wait for the overlapping ones in flight; returns the release. */
  async lockRange(start: number, end: number): Promise<() => void> {
    const lock: Span = { start, end, waiters: null };
    this.locks.add(lock);
    for (;;) {
      let busy: Span | null = null;
      for (const w of this.writes) {
        if (overlaps(w, start, end)) {
          busy = w;
          break;
        }
      }
      if (!busy) break;
      await waitSpan(busy);
    }
    return () => {
      this.locks.delete(lock);
      finish(lock);
    };
  }

  /** Add a child and rebuild it in the background from the healthy children. */
  async addChild(child: NexusChild): Promise<void> {
    if (this.shutdown) throw precondition(`nexus '${this.uuid}' is shut down`);
    if (this.children.some((c) => c.uuid === child.uuid || c.uri === child.uri)) {
      throw precondition(`nexus '${this.uuid}' already has child '${child.uri}'`);
    }
    child.state = 'Degraded';
    child.rebuildCursor = 0;
    this.children.push(child);
    await this.persist();
    this.startRebuild(child);
  }

  /**
   * A Faulted child is back (its io-engine restarted, its connection was dropped): `fresh` is a new
   * connection to the same replica. It takes the faulted one's place and is rebuilt from its rebuild
   * map (partial rebuild) when there is one, else in full. The swap and the state change happen in
   * one step, so each write either reaches the child or is logged in the map.
   */
  async returnChild(old: NexusChild, fresh: NexusChild): Promise<void> {
    if (this.shutdown) throw precondition(`nexus '${this.uuid}' is shut down`);
    if (old.state !== 'Faulted')
      throw precondition(`child '${old.uri}' of nexus '${this.uuid}' is not faulted`);
    // a rebuild of the old connection stops at its next step (the child is Faulted): let it
    await this.rebuilds.get(old);
    const i = this.children.indexOf(old);
    if (i < 0 || old.state !== 'Faulted')
      throw precondition(`child '${old.uri}' of nexus '${this.uuid}' changed meanwhile; try again`);
    fresh.rebuildMap = old.rebuildMap;
    old.rebuildMap = null;
    fresh.state = 'Degraded';
    fresh.rebuildCursor = 0;
    fresh.rebuildPartial = fresh.rebuildMap !== null;
    this.children[i] = fresh;
    await this.persist();
    this.startRebuild(fresh);
  }

  /** The nexus grew: logged children lack the new range. */
  grewTo(size: number): void {
    for (const c of this.children) {
      c.rebuildMap?.grow(size);
      c.unflushedCopies?.grow(size);
    }
    for (const w of [this.unflushed, ...this.flushing]) w.grow(size);
  }

  startRebuild(child: NexusChild): void {
    const job = rebuildChild(this, child, this.log).finally(() => this.rebuilds.delete(child));
    this.rebuilds.set(child, job);
  }

  /** Whether the rebuild of some child is still running. */
  get rebuilding(): boolean {
    return this.rebuilds.size > 0;
  }

  async removeChild(uriOrUuid: string): Promise<void> {
    const child = this.children.find((c) => c.uri === uriOrUuid || c.uuid === uriOrUuid);
    if (!child) throw precondition(`nexus '${this.uuid}' has no child '${uriOrUuid}'`);
    if (child.state === 'Online' && this.onlineCount() <= 1) {
      throw precondition(
        `child '${child.uri}' is the last healthy child of nexus '${this.uuid}'; add and rebuild another child first`,
      );
    }
    child.state = 'Faulted';
    child.reason = 'removed';
    await this.rebuilds.get(child);
    this.children.splice(this.children.indexOf(child), 1);
    child.rebuildMap = null;
    await child.detach().catch(() => {});
    await this.persist();
  }

  async faultChild(uriOrUuid: string): Promise<void> {
    const child = this.children.find((c) => c.uri === uriOrUuid || c.uuid === uriOrUuid);
    if (!child) throw precondition(`nexus '${this.uuid}' has no child '${uriOrUuid}'`);
    if (child.state === 'Online' && this.onlineCount() <= 1)
      throw precondition(`child '${child.uri}' is the last healthy child of nexus '${this.uuid}'`);
    await this.childFailed(child, new Error('faulted by request'));
  }

  /** Stop serving I/O, stop rebuilds, close children, record a clean shutdown. */
  async shutdownNexus(): Promise<void> {
    if (this.shutdown) return;
    this.shutdown = true;
    await Promise.allSettled([...this.rebuilds.values()]);
    while (this.writes.size > 0) await waitSpan([...this.writes][0]);
    for (const c of this.children) {
      try {
        if (c.state !== 'Faulted') await c.backend.flush();
      } catch {
        // closing anyway
      }
    }
    await this.persist(true);
    for (const c of this.children) await c.detach().catch(() => {});
  }
}

/** What a failed write tells the client: a full pool as such (ENOSPC), anything else as an I/O error. */
function clientErrno(err: unknown): number {
  return errnoOf(err) === Errno.ENOSPC ? Errno.ENOSPC : Errno.EIO;
}
