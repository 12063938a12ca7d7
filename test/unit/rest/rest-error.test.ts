import { describe, expect, it } from 'vitest';
import { ExitCode, plainGrpcDetail, StoreUnavailableError } from '../../../src/lib/errors.js';
import { nextStep, RestError } from '../../../src/lib/rest/errors.js';

/** How a CLI command reports what core answered: the exit code a script branches on, the next step. */
describe('RestError: exit codes and next steps of core answers', () => {
  const error = (kind: string, details: string) =>
    new RestError(kind, 507, 'msg', details, nextStep(kind, details));

  it('507 FailedPersist because the store write failed: the store is unreachable (5), check it, then look before retrying', () => {
    const e = error('FailedPersist', 'Store error');
    expect(e.exitCode).toBe(ExitCode.storeUnavailable);
    expect(e.suggestions.join('\n')).toContain('`storctl doctor store`');
    expect(e.suggestions.join('\n')).toContain('whether the request took effect is unknown');
  });

  it('507 FailedPersist for a resource still finishing an earlier operation (StoreDirty): busy (4), retry later', () => {
    const e = error('FailedPersist', 'StoreDirty: volume 1fe8f70b-0dab-4d52-9c5b-a23f14c6d9d5');
    expect(e.exitCode).toBe(ExitCode.conflict);
    expect(e.suggestions).toEqual([
      'core is still finishing an earlier operation on it; retry once that shows in `storctl events`',
    ]);
  });

  it("says a store that did not answer in time without gRPC's internal timings", () => {
    const e = new StoreUnavailableError(
      'etcd://127.0.0.1:2379',
      'Deadline exceeded after 3.001s,name resolution: 0.005s,time to current attempt start: 0.001s,Waiting for LB pick',
    );
    expect(e.message).toBe(
      'store etcd://127.0.0.1:2379 is unreachable: no answer within 3 s (deadline exceeded)',
    );
    // The same for an io-engine's answer (core names the node in front), and other texts stay.
    expect(
      plainGrpcDetail(
        'Deadline exceeded after 15.001s,name resolution: 0.001s,LB pick: 0.001s,remote_addr=127.0.0.1:40813',
      ),
    ).toBe('no answer within 15 s (deadline exceeded)');
    expect(plainGrpcDetail('Deadline exceeded after 0.301s,LB pick: 0.001s')).toBe(
      'no answer within 301 ms (deadline exceeded)',
    );
    expect(plainGrpcDetail("pool 'p1' not found")).toBe("pool 'p1' not found");
  });
});
