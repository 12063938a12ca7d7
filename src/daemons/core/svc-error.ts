import { status as grpcStatus } from '@grpc/grpc-js';
import { ExitCode, type ExitCodeValue, StorctlError } from '../../lib/errors.js';
import { IoEngineError } from '../../lib/io-engine/client.js';

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

/** `<resource> '<id>' not found`; the details name the resource as Mayastor's do (`The Pool '<id>' …`). */
export const notFound = (resource: string, id: string, detailsName = resource) =>
  new SvcError('NotFound', `${resource} '${id}' not found`, `The ${detailsName} '${id}' was not found`);

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

/** The REST kind of each storctl exit code (a lib error met inside core). */
const KIND_OF_EXIT: Partial<Record<ExitCodeValue, ErrorKind>> = {
  [ExitCode.usage]: 'InvalidArgument',
  [ExitCode.notFound]: 'NotFound',
  [ExitCode.conflict]: 'Conflict',
  [ExitCode.storeUnavailable]: 'FailedPersist',
  [ExitCode.serviceUnavailable]: 'Unavailable',
  [ExitCode.timeout]: 'DeadlineExceeded',
};

/** The REST kind of each gRPC status an io-engine answers with. */
const KIND_OF_GRPC: Partial<Record<grpcStatus, ErrorKind>> = {
  [grpcStatus.CANCELLED]: 'Aborted',
  [grpcStatus.INVALID_ARGUMENT]: 'InvalidArgument',
  [grpcStatus.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [grpcStatus.NOT_FOUND]: 'NotFound',
  [grpcStatus.ALREADY_EXISTS]: 'AlreadyExists',
  [grpcStatus.PERMISSION_DENIED]: 'PermissionDenied',
  [grpcStatus.RESOURCE_EXHAUSTED]: 'ResourceExhausted',
  [grpcStatus.FAILED_PRECONDITION]: 'FailedPrecondition',
  [grpcStatus.ABORTED]: 'Aborted',
  [grpcStatus.OUT_OF_RANGE]: 'OutOfRange',
  [grpcStatus.UNIMPLEMENTED]: 'Unimplemented',
  [grpcStatus.UNAVAILABLE]: 'Unavailable',
};

/**
 * The kind to answer when an io-engine failed a step of a request on a volume. Its NotFound is a
 * replica or pool that io-engine does not have now (restarted, not imported yet), no missing
 * resource of the request: answered as one, it would tell a CSI sidecar the volume (or the source
 * snapshot) is gone and end an HA switchover for good.
 */
export function stepFailureKind(kind: ErrorKind): ErrorKind {
  return kind === 'NotFound' ? 'Unavailable' : kind;
}

/** Map any thrown error to an SvcError, once, at the REST boundary. */
export function toSvcError(err: unknown): SvcError {
  if (err instanceof SvcError) return err;
  if (err instanceof StorctlError) return new SvcError(KIND_OF_EXIT[err.exitCode] ?? 'Internal', err.message);
  if (err instanceof IoEngineError) return new SvcError(KIND_OF_GRPC[err.code] ?? 'Internal', err.message);
  return new SvcError('Internal', err instanceof Error ? err.message : String(err));
}

/**
 * How long a switchover's teardown of the old target, or a volume read, waits for an io-engine: a
 * hung one (its connections open, nothing answering) must not hold them for the whole request
 * timeout. What is not done by then the garbage collectors finish once the node answers.
 */
export const HUNG_ENGINE_WAIT_MS = 1000;

/** `p`, or a rejection after `ms` (the work itself goes on). Without `ms`, just `p`. */
export function withDeadline<T>(p: Promise<T>, ms: number | undefined, what: string): Promise<T> {
  if (ms === undefined) return p;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SvcError('Timeout', `${what} within ${ms} ms`)), ms);
  });
  p.catch(() => {});
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
