import { describe, expect, it } from 'vitest';
import {
  clusterPrefix,
  nexusInfoKey,
  objectKey,
  parseKey,
  prefixRangeEnd,
  typePrefix,
} from '../../../src/lib/store/keys.js';

const space = { clusterId: '1013e263-e0ba-48b2-ae78-52d51b5da9c8', namespace: 'mayastor' };

describe('Mayastor v2 key layout', () => {
  it('builds the keys of docs/mayastor-compat.md §1.1–1.2', () => {
    expect(clusterPrefix(space)).toBe(
      '/openebs.io/mayastor/apis/v0/clusters/1013e263-e0ba-48b2-ae78-52d51b5da9c8/namespaces/mayastor',
    );
    expect(objectKey(space, 'NexusSpec', 'abc')).toBe(`${clusterPrefix(space)}/NexusSpec/abc`);
    expect(typePrefix(space, 'VolumeSpec')).toBe(`${clusterPrefix(space)}/VolumeSpec/`);
    expect(objectKey(space, 'StoreLeaseOwner', 'CoreAgent')).toMatch(/\/StoreLeaseOwner\/CoreAgent$/);
    expect(nexusInfoKey(space, 'n1', 'v1')).toBe(`${clusterPrefix(space)}/volume/v1/nexus/n1/info`);
    expect(nexusInfoKey(space, 'n1')).toBe(`${clusterPrefix(space)}/nexus/n1/info`);
  });

  it('parses keys back into their parts', () => {
    expect(parseKey(objectKey(space, 'VolumeSpec', 'v1'))).toEqual({
      ...space,
      type: 'VolumeSpec',
      id: 'v1',
    });
    expect(parseKey(nexusInfoKey(space, 'n1', 'v1'))).toEqual({
      ...space,
      type: 'NexusInfo',
      id: 'n1',
      volumeId: 'v1',
    });
    expect(parseKey(nexusInfoKey(space, 'n1'))).toMatchObject({
      type: 'NexusInfo',
      id: 'n1',
      volumeId: undefined,
    });
    expect(parseKey('/namespace/default/control-plane/VolumeSpec/x')).toBeNull();
    expect(parseKey(`${clusterPrefix(space)}/VolumeSpec/`)).toBeNull();
  });

  it('computes the end of a prefix range', () => {
    expect(prefixRangeEnd('a/')).toBe('a0');
    expect('a/zzz' < prefixRangeEnd('a/')).toBe(true);
    expect('a0' < prefixRangeEnd('a/')).toBe(false);
  });
});
