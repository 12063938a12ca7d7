/**
 * StoreLeaseOwner, key `StoreLeaseOwner/<service>` (docs/mayastor-compat.md §1.14): which instance of a
 * service holds the store lease lock (`StoreLeaseLock/<service>`).
 */
import { type Codec, fail, string } from './codec.js';
import { specCodec } from './common.js';
import { field, struct } from './struct.js';

export interface StoreLeaseOwner {
  /** Service name, e.g. `CoreAgent` (the key id). */
  kind: string;
  /** etcd lease id in lowercase hex. */
  lease_id: string;
  /** Instance (pod) name of the holder. */
  instance_name: string;
}

const leaseId: Codec<string> = {
  expected: 'a lease id in hex',
  decode: (raw) =>
    typeof raw === 'string' && /^[0-9a-f]+$/i.test(raw) ? raw : fail('a lease id in hex', raw),
  encode: (v) => v,
};

export const storeLeaseOwnerCodec: Codec<StoreLeaseOwner> = struct<StoreLeaseOwner>('StoreLeaseOwner', {
  kind: field(string),
  lease_id: field(leaseId),
  instance_name: field(string),
});

export const storeLeaseOwner = specCodec<StoreLeaseOwner>(
  'StoreLeaseOwner',
  storeLeaseOwnerCodec,
  'kind',
  (o) => o.kind,
);
