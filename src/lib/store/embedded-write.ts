import { NotFoundError, UsageError } from '../errors.js';
import type { KvRow, Statements } from './embedded-db.js';
import { toKeyValue } from './embedded-db.js';
import type { Compare, KeyValue, TxnOp, TxnOpResult, TxnResult } from './types.js';
import { compareBytes, prefixEnd, type TxnPlan } from './validate.js';

const MAX_SAFE_LEASE = Number.MAX_SAFE_INTEGER;

/**
 * The work of one IMMEDIATE write transaction of the embedded store. Revisions are assigned
 * lazily: a transaction that changes nothing leaves the revision alone (as etcd does); each expired
 * lease swept is its own revision, like etcd's lease revocation.
 */
export class WriteContext {
  private revision: number;
  private readonly startRevision: number;
  /** Revision of the current change set, once something changed. */
  private pending: number | undefined;
  private sub = 0;

  constructor(
    private readonly st: Statements,
    readonly now: number,
    private readonly retention: number,
  ) {
    this.revision = st.meta.get('revision')!;
    this.startRevision = this.revision;
  }

  txn(plan: TxnPlan): TxnResult {
    const succeeded = plan.compare.every((c) => this.evaluate(c));
    const ops = succeeded ? plan.success : plan.failure;
    this.beginChangeSet();
    const responses = ops.map((op) => this.apply(op));
    this.endChangeSet();
    return { succeeded, revision: this.revision, responses };
  }

  sweepExpiredLeases(): void {
    for (const id of this.st.expiredLeases.all(this.now)) this.revokeLease(id);
  }

  /** Every lease ends: each was granted to a process of an earlier boot, all gone with it. */
  revokeAllLeases(): void {
    for (const id of this.st.allLeases.all()) this.revokeLease(id);
  }

  revokeLease(id: number): void {
    this.beginChangeSet();
    for (const row of this.st.byLease.all(id)) this.deleteRow(row);
    this.st.deleteLease.run(id);
    this.endChangeSet();
  }

  compact(revision: number): void {
    if (revision > this.revision) {
      throw new UsageError(
        `cannot compact to revision ${revision}: the store is at revision ${this.revision}`,
      );
    }
    if (revision <= this.st.meta.get('compact_revision')!) return;
    this.st.compactBefore.run(revision);
    this.st.setMeta.run(revision, 'compact_revision');
  }

  /** Persist the revision; true when anything changed. Compacts old history now and then. */
  finish(): boolean {
    if (this.revision === this.startRevision) return false;
    this.st.setMeta.run(this.revision, 'revision');
    const compacted = this.st.meta.get('compact_revision')!;
    if (this.revision - compacted > 2 * this.retention) this.compact(this.revision - this.retention);
    return true;
  }

  private beginChangeSet(): void {
    this.pending = undefined;
    this.sub = 0;
  }

  private endChangeSet(): void {
    if (this.pending !== undefined) this.revision = this.pending;
    this.pending = undefined;
  }

  private changeRevision(): number {
    if (this.pending === undefined) this.pending = this.revision + 1;
    return this.pending;
  }

  private apply(op: TxnOp): TxnOpResult {
    switch (op.type) {
      case 'get': {
        const row = this.st.getRaw.get(op.key);
        return { kv: row ? toKeyValue(row) : null };
      }
      case 'put':
        this.putRow(op.key, op.value, op.lease);
        return {};
      case 'delete': {
        const row = this.st.getRaw.get(op.key);
        if (row) this.deleteRow(row);
        return { deleted: row ? 1 : 0 };
      }
      case 'deletePrefix': {
        const rows = this.st.rangeRaw.all({ from: op.prefix, end: prefixEnd(op.prefix) });
        for (const row of rows) this.deleteRow(row);
        return { deleted: rows.length };
      }
    }
  }

  private putRow(key: string, value: string, leaseHex: string | undefined): void {
    const lease = leaseHex === undefined || leaseHex === '0' ? 0 : parseInt(leaseHex, 16);
    if (lease !== 0) {
      const found = lease <= MAX_SAFE_LEASE ? this.st.getLease.get(lease) : undefined;
      if (!found || found.expires_at <= this.now) {
        throw new NotFoundError('lease', leaseHex!, {
          suggestions: ['grant a new lease; this one expired or was revoked'],
        });
      }
    }
    const rev = this.changeRevision();
    const prev = this.st.getRaw.get(key);
    const row: KvRow = {
      key,
      value,
      create_rev: prev ? prev.create_rev : rev,
      mod_rev: rev,
      version: prev ? prev.version + 1 : 1,
      lease,
    };
    this.st.upsert.run(row);
    this.st.insertEvent.run({
      rev,
      sub: this.sub++,
      key,
      deleted: 0,
      value,
      create_rev: row.create_rev,
      version: row.version,
      lease,
      ...prevColumns(prev),
    });
  }

  private deleteRow(prev: KvRow): void {
    const rev = this.changeRevision();
    this.st.deleteKey.run(prev.key);
    this.st.insertEvent.run({
      rev,
      sub: this.sub++,
      key: prev.key,
      deleted: 1,
      value: null,
      create_rev: null,
      version: null,
      lease: null,
      ...prevColumns(prev),
    });
  }

  /** etcd's rules: a missing key has revisions/version 0 and lease 0; a value compare on it fails. */
  private evaluate(c: Compare): boolean {
    const row = this.st.getRaw.get(c.key);
    if (c.target === 'value') {
      if (!row) return false;
      return holds(compareBytes(row.value, c.value), c.op);
    }
    if (c.target === 'lease') {
      const actual = row ? row.lease.toString(16) : '0';
      return c.op === '==' ? actual === normalizeHex(c.value) : actual !== normalizeHex(c.value);
    }
    const kv: Pick<KeyValue, 'createRevision' | 'modRevision' | 'version'> = row
      ? toKeyValue(row)
      : { createRevision: 0, modRevision: 0, version: 0 };
    const actual =
      c.target === 'mod' ? kv.modRevision : c.target === 'create' ? kv.createRevision : kv.version;
    return holds(actual - c.value, c.op);
  }
}

function holds(diff: number, op: Compare['op']): boolean {
  switch (op) {
    case '==':
      return diff === 0;
    case '!=':
      return diff !== 0;
    case '<':
      return diff < 0;
    case '>':
      return diff > 0;
  }
}

function normalizeHex(hex: string): string {
  return hex.replace(/^0+(?=.)/, '');
}

function prevColumns(prev: KvRow | undefined) {
  return {
    prev_value: prev ? prev.value : null,
    prev_create: prev ? prev.create_rev : null,
    prev_mod: prev ? prev.mod_rev : null,
    prev_version: prev ? prev.version : null,
    prev_lease: prev ? prev.lease : null,
  };
}
