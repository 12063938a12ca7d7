import { status } from '@grpc/grpc-js';
import { GrpcError } from '../grpc/status.js';
import { CredentialError } from '../mount/credentials.js';
import { MountConflictError, MountFailedError } from '../mount/errors.js';
import { FuseOptionUnsupportedError } from '../mount/fuse-binary.js';
import { MountOptionError } from '../mount/options-policy.js';

/**
 * Map a mount-layer error to the CSI status the spec asks for: bad input → INVALID_ARGUMENT,
 * incompatible republish → ALREADY_EXISTS, anything that failed while mounting → INTERNAL (with the
 * FUSE daemon's own output in the message).
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
  if (err instanceof MountFailedError) return new GrpcError(status.INTERNAL, err.message);
  return new GrpcError(status.INTERNAL, err instanceof Error ? err.message : String(err));
}
