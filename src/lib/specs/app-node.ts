/**
 * AppNodeSpec, key `AppNodeSpec/<app-node-id>` (docs/mayastor-compat.md §1.14): a CSI node that
 * registered with the control plane (used to freeze/unfreeze filesystems around snapshots).
 */
import { type Codec, nullable, string } from './codec.js';
import { type Labels, labels, specCodec } from './common.js';
import { field, struct } from './struct.js';

export interface AppNodeSpec {
  id: string;
  /** CSI node's gRPC endpoint "ip:port". */
  endpoint: string;
  labels: Labels | null;
}

export const appNodeSpecCodec: Codec<AppNodeSpec> = struct<AppNodeSpec>('AppNodeSpec', {
  id: field(string),
  endpoint: field(string),
  labels: field(nullable(labels)),
});

export const appNodeSpec = specCodec<AppNodeSpec>('AppNodeSpec', appNodeSpecCodec, 'id', (a) => a.id);
