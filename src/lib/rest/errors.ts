import { ExitCode, type ExitCodeValue, StorctlError } from '../errors.js';

/**
 * Core answered for another key space than the client expects (CLUSTER_HEADER): whatever it said
 * is not about the cluster being read.
 */
export class OtherClusterError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly served: string | undefined,
    readonly expected: string,
  ) {
    super(`core at ${baseUrl} serves cluster ${served ?? '(unnamed)'}, not ${expected}`);
    this.name = 'OtherClusterError';
  }
}

/** An error answered by core's REST API: its kind, message and HTTP status, with a next step. */
export class RestError extends StorctlError {
  constructor(
    readonly kind: string,
    readonly status: number,
    message: string,
    readonly details: string,
    suggestions: string[],
  ) {
    super(
      `REST_${kind.replace(/[A-Z]/g, (c, i) => (i ? '_' : '') + c).toUpperCase()}`,
      `${kind}: ${message}`,
      exitCodeOf(kind, details),
      { suggestions },
    );
    this.name = 'RestError';
  }
}

function exitCodeOf(kind: string, details: string): ExitCodeValue {
  switch (kind) {
    case 'InvalidArgument':
    case 'Deserialize':
    case 'NotAcceptable':
    case 'OutOfRange':
      return ExitCode.usage;
    case 'NotFound':
      return ExitCode.notFound;
    case 'Conflict':
    case 'Deleting':
    case 'InUse':
    case 'FailedPrecondition':
    case 'AlreadyExists':
    case 'AlreadyPublished':
    case 'NotPublished':
    case 'AlreadyShared':
    case 'NotShared':
    // The cluster's state (capacity, cordons) forbids the request as asked.
    case 'ResourceExhausted':
    case 'CapacityLimitExceeded':
      return ExitCode.conflict;
    case 'Unavailable':
    case 'Aborted':
      return ExitCode.serviceUnavailable;
    case 'Timeout':
    case 'DeadlineExceeded':
      return ExitCode.timeout;
    // Core could not write to the store, or (StoreDirty) an earlier write of the resource is
    // still being finished: the resource's state forbids the request for now.
    case 'FailedPersist':
      return isStoreDirty(details) ? ExitCode.conflict : ExitCode.storeUnavailable;
    default:
      return ExitCode.failure;
  }
}

/** The next step an operator can take for each kind of failure (and, where it tells more, its details). */
export function nextStep(kind: string, details?: string): string[] {
  if (details === 'VolumePublished')
    return [
      'unpublish it first (`storctl volume unpublish <id>`), or delete it anyway: `storctl volume delete <id> --force`',
    ];
  if (details === 'PoolNotEmpty') return []; // the message names what the pool holds and how to empty it
  switch (kind) {
    case 'NotFound':
      return ['list what exists with `storctl get volumes` / `storctl get pools` / `storctl get nodes`'];
    case 'InvalidArgument':
    case 'Deserialize':
      return ['fix the named field and retry; `storctl <command> --help` shows the accepted values'];
    case 'Conflict':
      return ['another operation is running on the resource; retry in a moment'];
    case 'FailedPersist':
      if (details === 'StoreFull')
        return ['nothing was changed: free space in the store as `storctl doctor store` says, then retry'];
      return isStoreDirty(details)
        ? ['core is still finishing an earlier operation on it; retry once that shows in `storctl events`']
        : [
            'core could not write to the store: check it (`storctl doctor store`; for etcd, `etcdctl endpoint health`)',
            'whether the request took effect is unknown: look (`storctl get …`, `storctl events`) before retrying',
          ];
    case 'ResourceExhausted':
    case 'CapacityLimitExceeded':
      return [
        'add capacity (`storctl pool create`), uncordon nodes, or ask for fewer replicas / a smaller size',
      ];
    case 'FailedPrecondition':
      return ['check the resource state with `storctl get volume <id>` and `storctl events`'];
    case 'AlreadyExists':
      return ['use another id, or delete the existing resource first'];
    case 'AlreadyPublished':
      return [
        'unpublish it first (`storctl volume unpublish <id>`), or move its target with `storctl volume publish <id> --node <node> --republish`',
      ];
    case 'NotPublished':
      return ['publish it first (`storctl volume publish <id>`)'];
    case 'NotAcceptable':
      return []; // the message says what is acceptable (a volume resize that shrinks)
    case 'InUse':
    case 'Deleting':
      return ['wait for the resource to be released or deleted, then retry'];
    case 'Unavailable':
    case 'Aborted':
      return ['check that the io-engines are up: `storctl get nodes`'];
    default:
      return ['see the core log and `storctl events` for details'];
  }
}

/** A 507 for a resource whose earlier operation core has not finished persisting (svc-error.ts `dirty`). */
const isStoreDirty = (details: string | undefined) => !!details?.startsWith('StoreDirty');
