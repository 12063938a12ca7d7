import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DecodeError } from '../errors.js';
import { type Column, cell, shownColumns } from '../output/render.js';
import { storedVolume } from '../rest/present.js';
import { decodeRecord } from '../specs/index.js';
import { stringifyJson } from '../specs/json.js';
import { decodeRangeKvs } from '../store/etcd-range-codec.js';
import type { ClusterState } from './cluster.js';
import type { StoredPage } from './pages.js';
import { type VolumeRow, volumeColumns, volumeRow } from './views/volumes.js';

/**
 * Volumes printed as REST shows them when core does not answer (its spec half), or, given `table`,
 * as the cells of `get volumes`' table. Plain data: it is sent to the validation worker once.
 */
export interface VolumePresenter {
  /** Volume id → how many snapshots have it as their source. */
  snapshotCounts: Record<string, number>;
  table?: {
    /** `-o wide`: with the wide columns. */
    wide: boolean;
    /** The store's NexusInfo records by volume id, which a volume's status reads. */
    nexusInfo: ClusterState['nexusInfo'];
  };
}

/** What validating one page found: what to print for it, and the values left out (undecodable) and why. */
export interface PageVerdict {
  errors: { key: string; field: string; detail: string }[];
  /**
   * Unless a table is asked for: the JSON texts to print for the values that decoded (as stored, or
   * as the presenter shows them), in order, joined by `,\n` (one string crosses threads far cheaper
   * than thousands).
   */
  text?: string;
  /** How many items `text` holds. */
  printed: number;
  /** With a table presenter: each volume's table cells, in order. */
  rows?: string[][];
}

/**
 * Decode (validate) every value of a page into the text a listing prints for it: the stored value
 * as is, or, given `present`, what REST shows for it (or its table cells).
 */
export function validatePage(keys: string[], values: string[], present?: VolumePresenter): PageVerdict {
  const verdict: PageVerdict = { errors: [], printed: 0 };
  const texts: string[] = [];
  const rows: string[][] = [];
  const table = present?.table && tableOf(present.table);
  for (let i = 0; i < keys.length; i++) {
    try {
      const rec = decodeRecord(keys[i], values[i]);
      if (!rec || (present && rec.type !== 'VolumeSpec')) continue;
      if (!present) texts.push(values[i]);
      else if (rec.type === 'VolumeSpec') {
        if (table) {
          const row = volumeRow(table.state, rec.value, present.snapshotCounts);
          rows.push(table.columns.map((c) => cell(c.get(row))));
        } else
          texts.push(stringifyJson(storedVolume(rec.value, present.snapshotCounts[rec.value.uuid] ?? 0)));
      }
    } catch (err) {
      if (!(err instanceof DecodeError)) throw err;
      verdict.errors.push({ key: err.key, field: err.field, detail: err.detail });
    }
  }
  if (table) verdict.rows = rows;
  else {
    verdict.text = texts.join(',\n');
    verdict.printed = texts.length;
  }
  return verdict;
}

/** A page as it crosses to the worker: its keys and values, or etcd's encoding of them. */
export type PageMessage = { keys: string[]; values: string[] } | { encoded: Uint8Array };

export function pageMessage(page: StoredPage): PageMessage {
  if ('encoded' in page) return { encoded: page.encoded };
  if ('keys' in page) return { keys: page.keys, values: page.values };
  return { keys: page.kvs.map((kv) => kv.key), values: page.kvs.map((kv) => kv.value) };
}

/** validatePage of a page message (decoded here if still encoded). */
export function validatePageMessage(msg: PageMessage, present?: VolumePresenter): PageVerdict {
  const { keys, values } = 'encoded' in msg ? decodeRangeKvs(msg.encoded) : msg;
  return validatePage(keys, values, present);
}

/** The store-only cluster state a table row reads (its NexusInfo), built once per presenter. */
const tables = new WeakMap<object, { state: ClusterState; columns: Column<VolumeRow>[] }>();
function tableOf(t: NonNullable<VolumePresenter['table']>) {
  let table = tables.get(t);
  if (!table) {
    const state: ClusterState = { specs: {}, nexusInfo: t.nexusInfo, liveness: new Map(), errors: [] };
    table = { state, columns: shownColumns(volumeColumns(state), t.wide) };
    tables.set(t, table);
  }
  return table;
}

export function verdictErrors(verdict: PageVerdict): DecodeError[] {
  return verdict.errors.map((e) => new DecodeError(e.key, e.field, e.detail));
}

const WORKER_FILE = new URL('./validate-worker.js', import.meta.url);

/**
 * Validates pages of a big listing on a worker thread, so decoding overlaps reading from the store
 * and writing the output (100k volumes: ~1 s of decoding off the main thread). Verdicts come back
 * in the order pages were sent. Where no compiled worker exists (tests running the TypeScript
 * sources) pages are validated on this thread.
 */
export class PageValidator {
  private worker: Worker | null = null;

  /** `present`: also turn each value into the JSON text a listing prints (on the worker too). */
  constructor(private readonly present?: VolumePresenter) {}

  private broken: Error | null = null;
  private readonly waiting: { resolve: (v: PageVerdict) => void; reject: (e: Error) => void }[] = [];

  check(page: StoredPage): Promise<PageVerdict> {
    const worker = this.start();
    if (!worker) return Promise.resolve(validatePageMessage(pageMessage(page), this.present));
    if (this.broken) return Promise.reject(this.broken);
    return new Promise((resolve, reject) => {
      this.waiting.push({ resolve, reject });
      if ('encoded' in page) {
        // A copy of its own, moved to the worker (not cloned): the response may share its memory.
        const encoded = new Uint8Array(page.encoded);
        worker.postMessage({ encoded }, [encoded.buffer]);
      } else worker.postMessage(pageMessage(page));
    });
  }

  /** Pages sent to the worker whose verdicts have not come back yet. */
  get backlog(): number {
    return this.waiting.length;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }

  private start(): Worker | null {
    if (this.worker || this.broken) return this.worker;
    if (!existsSync(fileURLToPath(WORKER_FILE))) return null;
    const worker = new Worker(WORKER_FILE);
    if (this.present) worker.postMessage({ present: this.present });
    const fail = (err: Error) => {
      this.broken ??= err;
      for (const w of this.waiting.splice(0)) w.reject(err);
    };
    worker.on('message', (msg: PageVerdict | { error: string }) => {
      if ('error' in msg) fail(new Error(`validating values failed: ${msg.error}`));
      else this.waiting.shift()?.resolve(msg);
    });
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.worker === worker) fail(new Error(`the validation worker exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }
}
