import { status } from '@grpc/grpc-js';
import { ServiceUnavailableError, TimeoutError } from '../errors.js';
import { GrpcError } from '../grpc/status.js';
import { CredentialError } from '../mount/credentials.js';
import { MountConflictError, MountFailedError } from '../mount/errors.js';
import { FuseOptionUnsupportedError } from '../mount/fuse-binary.js';
import { MountOptionError } from '../mount/options-policy.js';
import { RestError } from '../rest/errors.js';

/**
 * Map a mount-layer error to the CSI status the spec asks for: bad input → INVALID_ARGUMENT,
 * incompatible republish → ALREADY_EXISTS, a bucket the S3 endpoint does not have → NOT_FOUND,
 * credentials it refuses → PERMISSION_DENIED, anything else that failed while mounting → INTERNAL (with
 * the FUSE daemon's own output in the message).
 */
export function toCsiError(err: unknown): GrpcError {
  if (err instanceof GrpcError) return err;
  if (
    err instanceof MountOptionError ||
    err instanceof CredentialError ||
    err instanceof FuseOptionUnsupportedError
  ) {
    return new GrpcError(status.INVALID_ARGUMENT, err.message);
  }
  if (err instanceof MountConflictError) return new GrpcError(status.ALREADY_EXISTS, err.message);
  if (err instanceof MountFailedError) {
    // What the S3 endpoint refused is the caller's to fix: the codes CSI names for it.
    const code =
      err.refusal === 'no-such-bucket'
        ? status.NOT_FOUND
        : err.refusal === 'credentials-refused'
          ? status.PERMISSION_DENIED
          : status.INTERNAL;
    return new GrpcError(code, err.message);
  }
  return new GrpcError(status.INTERNAL, err instanceof Error ? err.message : String(err));
}

/**
 * Core REST error kind (docs/mayastor-compat.md §2.3) → CSI status: the one table the block CSI
 * driver maps REST failures through. Busy or dirty resources (another operation pending) are
 * ABORTED, as the spec asks for "operation pending for this volume"; InUse (snapshots, clones) is
 * FAILED_PRECONDITION ("in use"); capacity kinds are RESOURCE_EXHAUSTED.
 */
const REST_KIND_TO_CSI: Record<string, status> = {
  InvalidArgument: status.INVALID_ARGUMENT,
  Deserialize: status.INVALID_ARGUMENT,
  NotAcceptable: status.INVALID_ARGUMENT,
  NotFound: status.NOT_FOUND,
  AlreadyExists: status.ALREADY_EXISTS,
  OutOfRange: status.OUT_OF_RANGE,
  Conflict: status.ABORTED,
  Deleting: status.ABORTED,
  FailedPersist: status.ABORTED,
  Aborted: status.ABORTED,
  InUse: status.FAILED_PRECONDITION,
  FailedPrecondition: status.FAILED_PRECONDITION,
  AlreadyPublished: status.FAILED_PRECONDITION,
  NotPublished: status.FAILED_PRECONDITION,
  AlreadyShared: status.FAILED_PRECONDITION,
  NotShared: status.FAILED_PRECONDITION,
  ResourceExhausted: status.RESOURCE_EXHAUSTED,
  CapacityLimitExceeded: status.RESOURCE_EXHAUSTED,
  PermissionDenied: status.PERMISSION_DENIED,
  Unauthenticated: status.UNAUTHENTICATED,
  Unauthorized: status.UNAUTHENTICATED,
  Timeout: status.DEADLINE_EXCEEDED,
  DeadlineExceeded: status.DEADLINE_EXCEEDED,
  Unavailable: status.UNAVAILABLE,
  Unimplemented: status.UNIMPLEMENTED,
  Internal: status.INTERNAL,
};

/**
 * Where one RPC's error table asks for another code than the general one: a snapshot over the
 * volume's maxSnapshots (core's SnapshotMaxLimit, OutOfRange) is a quota, RESOURCE_EXHAUSTED.
 */
const RPC_OVERRIDES: Record<string, Record<string, status>> = {
  CreateSnapshot: { OutOfRange: status.RESOURCE_EXHAUSTED },
};

/** The CSI status of a failed core REST call (or of an unreachable / slow core) in RPC `rpc`. */
export function restToCsiError(err: unknown, rpc?: string): GrpcError {
  if (err instanceof GrpcError) return err;
  if (err instanceof RestError) {
    const code =
      (rpc ? RPC_OVERRIDES[rpc]?.[err.kind] : undefined) ?? REST_KIND_TO_CSI[err.kind] ?? status.INTERNAL;
    return new GrpcError(code, err.message);
  }
  if (err instanceof ServiceUnavailableError) return new GrpcError(status.UNAVAILABLE, err.message);
  if (err instanceof TimeoutError) return new GrpcError(status.DEADLINE_EXCEEDED, err.message);
  return new GrpcError(status.INTERNAL, err instanceof Error ? err.message : String(err));
}

/** The REST kind of a failed call, or undefined when it is not a core REST answer. */
export const restKind = (err: unknown): string | undefined =>
  err instanceof RestError ? err.kind : undefined;
