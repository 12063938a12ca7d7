import * as grpc from '@grpc/grpc-js';
import { GrpcError } from '../../lib/grpc/status.js';

/** The io-engine's error vocabulary: a gRPC code a caller can act on and a message naming the resource. */
export const notFound = (kind: string, id: string, hint = '') =>
  new GrpcError(grpc.status.NOT_FOUND, `${kind} '${id}' not found${hint ? `; ${hint}` : ''}`);
export const alreadyExists = (kind: string, id: string, hint = '') =>
  new GrpcError(grpc.status.ALREADY_EXISTS, `${kind} '${id}' already exists${hint ? `; ${hint}` : ''}`);
export const exhausted = (message: string) => new GrpcError(grpc.status.RESOURCE_EXHAUSTED, message);
export const precondition = (message: string) => new GrpcError(grpc.status.FAILED_PRECONDITION, message);
export const invalid = (message: string) => new GrpcError(grpc.status.INVALID_ARGUMENT, message);
export const unavailable = (message: string) => new GrpcError(grpc.status.UNAVAILABLE, message);

/** A remote child that could not be connected to: its io-engine, or the network to it, is down. */
export class ChildUnreachable extends GrpcError {
  constructor(message: string) {
    super(grpc.status.FAILED_PRECONDITION, message);
  }
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,126}$/;

/** Names and uuids become file and export names: a conservative charset, no path separators. */
export function checkName(what: string, value: unknown): string {
  if (typeof value !== 'string' || !NAME_RE.test(value)) {
    throw invalid(
      `${what} '${String(value)}' is invalid: use 1-127 characters from [A-Za-z0-9._:-], starting with a letter or digit`,
    );
  }
  return value;
}

/** A positive byte count from a proto uint64 (string) or number. */
export function checkSize(what: string, value: unknown, { allowZero = false } = {}): number {
  const n = typeof value === 'string' ? Number(value) : typeof value === 'number' ? value : Number.NaN;
  if (!Number.isSafeInteger(n) || n < 0 || (!allowZero && n === 0)) {
    throw invalid(`${what} '${String(value)}' is invalid: expected a positive number of bytes`);
  }
  return n;
}
