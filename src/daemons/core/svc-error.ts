import { StorctlError } from '../../lib/errors.js';

/**
 * Mayastor's REST error kinds (docs/mayastor-compat.md §2.3) and the HTTP status each maps to. Core code throws
 * SvcError with one of these kinds; the REST boundary turns it into `{details, message, kind}`.
 */
export const KIND_STATUS = {
  Deserialize: 400,
  InvalidArgument: 400,
  PermissionDenied: 401,
  Unauthenticated: 401,
  Unauthorized: 401,
  NotFound: 404,
  NotAcceptable: 406,
  Timeout: 408,
  Conflict: 409,
  Deleting: 409,
  InUse: 409,
  FailedPrecondition: 412,
  AlreadyShared: 412,
  NotShared: 412,
  NotPublished: 412,
  AlreadyPublished: 412,
  OutOfRange: 416,
  AlreadyExists: 422,
  Internal: 500,
  Unimplemented: 501,
  Aborted: 503,
  Unavailable: 503,
  DeadlineExceeded: 504,
  ResourceExhausted: 507,
  FailedPersist: 507,
  CapacityLimitExceeded: 507,
} as const;

export type ErrorKind = keyof typeof KIND_STATUS;

export function isErrorKind(k: unknown): k is ErrorKind {
  return typeof k === 'string' && Object.hasOwn(KIND_STATUS, k);
}

/** An error of the core service: a REST kind, a short message, and details naming the resource. */
export class SvcError extends Error {
  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details: string = message,
  ) {
    super(message);
    this.name = 'SvcError';
  }
  get status(): number {
    return KIND_STATUS[this.kind];
  }
}

export const notFound = (resource: string, id: string) =>
  new SvcError('NotFound', `${resource} '${id}' not found`, `The ${resource} '${id}' was not found`);

export const invalid = (field: string, why: string) =>
  new SvcError('InvalidArgument', `invalid '${field}': ${why}`, `field '${field}' ${why}`);

/** Busy in-memory sequencer (Mayastor OperationSequence): another operation is running on it. */
export const busy = (resource: string, id: string) =>
  new SvcError(
    'Conflict',
    `${resource} '${id}' is busy with another operation; retry`,
    `${resource} ${id} busy`,
  );

/** A spec with a pending operation rejects new requests until reconciled (StoreDirty → 507). */
export const dirty = (resource: string, id: string) =>
  new SvcError(
    'FailedPersist',
    `${resource} '${id}' has a pending operation that is not yet persisted; retry after it is reconciled`,
    `StoreDirty: ${resource} ${id}`,
  );

/** Map any thrown error to an SvcError, once, at the REST boundary. */
export function toSvcError(err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  if (err instanceof StorctlError) {
    const kind: ErrorKind =
      err.exitCode === 2
        ? 'InvalidArgument'
        : err.exitCode === 3
          ? 'NotFound'
          : err.exitCode === 4
            ? 'Conflict'
            : err.exitCode === 5
              ? 'FailedPersist'
              : err.exitCode === 6
                ? 'Unavailable'
                : err.exitCode === 7
                  ? 'DeadlineExceeded'
                  : 'Internal';
    return new SvcError(kind, err.message);
  }
  const e = err as { code?: number; details?: string; message?: string };
  // gRPC errors from io-engines: map the status code (grpc-js numeric codes).
  if (typeof e?.code === 'number' && typeof e.details === 'string') {
    const grpcKinds: Record<number, ErrorKind> = {
      1: 'Aborted',
      3: 'InvalidArgument',
      4: 'DeadlineExceeded',
      5: 'NotFound',
      6: 'AlreadyExists',
      7: 'PermissionDenied',
      8: 'ResourceExhausted',
      9: 'FailedPrecondition',
      10: 'Aborted',
      11: 'OutOfRange',
      12: 'Unimplemented',
      14: 'Unavailable',
    };
    return new SvcError(grpcKinds[e.code] ?? 'Internal', e.details || String(e.message));
  }
  return new SvcError('Internal', err instanceof Error ? err.message : String(err));
}
