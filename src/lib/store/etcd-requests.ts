import { readFileSync } from 'node:fs';
import { CompareResult, CompareTarget, type ICompare, type IRequestOp } from 'etcd3/lib/rpc.js';
import { UsageError } from '../errors.js';
import type { StoreTlsFiles } from './open.js';
import type { Compare, TxnOp } from './types.js';
import { prefixEnd } from './validate.js';

/** The store's requests in etcd3's raw RPC shapes (keys as Buffers, lease ids as decimal strings). */

/**
 * Range bounds of a prefix in etcd's terms (the empty prefix is every key: "\0" to "\0"), or of
 * [start, end) within it.
 */
export function prefixBounds(
  prefix: string,
  start?: string,
  end?: string,
): { key: Buffer; range_end: Buffer } {
  const stop = end ?? prefixEnd(prefix);
  return {
    key: Buffer.from(start ?? (prefix === '' ? '\0' : prefix)),
    range_end: stop === '' ? Buffer.from([0]) : Buffer.from(stop),
  };
}

export const leaseToDecimal = (hex: string) => BigInt(`0x${hex}`).toString();
export const leaseToHex = (dec: string) => BigInt(dec).toString(16);

const TARGET = {
  mod: CompareTarget.Mod,
  create: CompareTarget.Create,
  version: CompareTarget.Version,
  value: CompareTarget.Value,
  lease: CompareTarget.Lease,
};
const RESULT = {
  '==': CompareResult.Equal,
  '!=': CompareResult.NotEqual,
  '<': CompareResult.Less,
  '>': CompareResult.Greater,
};
const FIELD = {
  mod: 'mod_revision',
  create: 'create_revision',
  version: 'version',
  value: 'value',
  lease: 'lease',
} as const;

let ipServerNameWarningDropped = false;

/**
 * grpc-js sets the TLS ServerName (SNI) to the endpoint's host even when it is an IP address, and
 * Node then prints a DEP0123 DeprecationWarning on stderr for every `etcd+https://127.0.0.1:…`
 * store. Only that warning is dropped: the certificate is still verified against the IP (its
 * subjectAltName), which is what the warning's "will be ignored" refers to (the SNI field).
 */
function dropIpServerNameWarning(): void {
  if (ipServerNameWarningDropped) return;
  ipServerNameWarningDropped = true;
  const emit = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: unknown, ...rest: unknown[]) => {
    const options = rest[0];
    const code =
      typeof options === 'object' && options !== null ? (options as { code?: unknown }).code : rest[1];
    if (code === 'DEP0123') return;
    emit(warning, ...rest);
  }) as typeof process.emitWarning;
}

export function readTls(tls: StoreTlsFiles): {
  rootCertificate: Buffer;
  privateKey?: Buffer;
  certChain?: Buffer;
} {
  const read = (what: string, path: string | undefined) => {
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new UsageError(`cannot read the etcd TLS ${what} file ${path}: ${(err as Error).message}`);
    }
  };
  const cert = read('certificate', tls.cert);
  const key = read('key', tls.key);
  if (Boolean(cert) !== Boolean(key))
    throw new UsageError('etcd TLS needs both a client certificate and its key, or neither');
  dropIpServerNameWarning();
  // grpc-js accepts a null root certificate (system roots); etcd3's typing insists on a Buffer.
  return { rootCertificate: read('CA', tls.ca) as Buffer, privateKey: key, certChain: cert };
}

export function toCompare(c: Compare): ICompare {
  const value =
    c.target === 'value'
      ? Buffer.from(c.value)
      : c.target === 'lease'
        ? c.value === '0'
          ? '0'
          : leaseToDecimal(c.value)
        : c.value;
  return {
    key: Buffer.from(c.key),
    target: TARGET[c.target],
    result: RESULT[c.op],
    [FIELD[c.target]]: value,
  };
}

export function toRequestOp(op: TxnOp): IRequestOp {
  switch (op.type) {
    case 'get':
      return { request_range: { key: Buffer.from(op.key) } };
    case 'put':
      return {
        request_put: {
          key: Buffer.from(op.key),
          value: Buffer.from(op.value),
          lease: op.lease && op.lease !== '0' ? leaseToDecimal(op.lease) : undefined,
        },
      };
    case 'delete':
      return { request_delete_range: { key: Buffer.from(op.key) } };
    case 'deletePrefix':
      return { request_delete_range: prefixBounds(op.prefix) };
  }
}
