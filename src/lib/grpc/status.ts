import * as grpc from '@grpc/grpc-js';
import { ExitCode, StorctlError } from '../errors.js';

/** A gRPC error with a code a caller can act on and a message naming the resource. */
export class GrpcError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
    this.name = 'GrpcError';
  }
}

export const grpcError = (code: grpc.status, message: string) => new GrpcError(code, message);

const exitToStatus: Record<number, grpc.status> = {
  [ExitCode.usage]: grpc.status.INVALID_ARGUMENT,
  [ExitCode.notFound]: grpc.status.NOT_FOUND,
  [ExitCode.conflict]: grpc.status.FAILED_PRECONDITION,
  [ExitCode.storeUnavailable]: grpc.status.UNAVAILABLE,
  [ExitCode.serviceUnavailable]: grpc.status.UNAVAILABLE,
  [ExitCode.timeout]: grpc.status.DEADLINE_EXCEEDED,
};

/** Map any thrown error to a gRPC ServiceError, once, at the server boundary. */
export function toServiceError(err: unknown): Partial<grpc.ServiceError> {
  if (err instanceof GrpcError) return { code: err.code, details: err.message, message: err.message };
  if (err instanceof StorctlError) {
    const code = exitToStatus[err.exitCode] ?? grpc.status.INTERNAL;
    return { code, details: err.message, message: err.message };
  }
  const message = err instanceof Error ? err.message : String(err);
  return { code: grpc.status.INTERNAL, details: message, message };
}

/**
 * Wrap an async handler as a grpc-js unary handler: resolve → callback(null, value),
 * throw → callback(mapped status).
 */
export function unary<Req, Res>(
  handler: (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    handler(call.request, call).then(
      (res) => callback(null, res),
      (err) => callback(toServiceError(err) as grpc.ServiceError),
    );
  };
}
