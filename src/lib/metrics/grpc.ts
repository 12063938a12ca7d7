import * as grpc from '@grpc/grpc-js';
import { grpcDuration, grpcRequests } from './catalog.js';

const codeNames = Object.fromEntries(
  Object.entries(grpc.status)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v, k]),
) as Record<number, string>;

/**
 * A gRPC server whose unary methods count their requests and time them (storctl_grpc_*), labelled
 * with the service and method. Daemons create this instead of `grpc.Server`; nothing else changes.
 */
export class MeteredGrpcServer extends grpc.Server {
  override addService(
    service: grpc.ServiceDefinition,
    implementation: grpc.UntypedServiceImplementation,
  ): void {
    const wrapped: grpc.UntypedServiceImplementation = {};
    for (const [name, handler] of Object.entries(implementation)) {
      const def = service[name];
      // Streaming methods (none today) pass through unmeasured.
      wrapped[name] =
        def && !def.requestStream && !def.responseStream && typeof handler === 'function'
          ? meterUnary(serviceName(def.path), name, handler as grpc.handleUnaryCall<unknown, unknown>)
          : handler;
    }
    super.addService(service, wrapped);
  }
}

/** `/csi.v1.Node/NodeStageVolume` → `csi.v1.Node`. */
const serviceName = (path: string) => path.split('/')[1] ?? path;

function meterUnary(
  service: string,
  method: string,
  handler: grpc.handleUnaryCall<unknown, unknown>,
): grpc.handleUnaryCall<unknown, unknown> {
  const timer = grpcDuration.labels(service, method);
  return (call, callback) => {
    const end = timer.startTimer();
    handler(call, (err, value, trailer, flags) => {
      end();
      const code = err ? ((err as Partial<grpc.ServiceError>).code ?? grpc.status.UNKNOWN) : grpc.status.OK;
      grpcRequests.inc({ service, method, code: codeNames[code] ?? String(code) });
      callback(err, value, trailer, flags);
    });
  };
}
