import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** Directory of the wire contracts (`proto/` at the package root). */
export const PROTO_DIR = fileURLToPath(new URL('../../../proto/', import.meta.url));

/**
 * Load a proto from `proto/` with the one set of loader options every storctl service and client
 * uses: field names as written, 64-bit integers as strings, enums as their names, defaults filled.
 */
export function loadProto(file: string): grpc.GrpcObject {
  const definition = protoLoader.loadSync(file, {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  return grpc.loadPackageDefinition(definition);
}

/** Walk a dotted package path (`csi.v1.Node`) inside a loaded proto. */
export function lookupService(root: grpc.GrpcObject, path: string): grpc.ServiceClientConstructor {
  let node: unknown = root;
  for (const part of path.split('.')) node = (node as Record<string, unknown>)?.[part];
  if (typeof node !== 'function' || !('service' in node))
    throw new Error(`service ${path} not found in proto`);
  return node as grpc.ServiceClientConstructor;
}
