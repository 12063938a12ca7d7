import {
  ClientClosedError,
  castGrpcError,
  EtcdLeaseInvalidError,
  EtcdPermissionDeniedError,
  GRPCDeadlineExceededError,
  GRPCNotImplementedError,
  GRPCUnauthenticatedError,
  GRPCUnavailableError,
  isRecoverableError,
} from 'etcd3/lib/errors.js';
import {
  ExitCode,
  NotFoundError,
  StorctlError,
  StoreFullError,
  StoreUnavailableError,
  UsageError,
} from '../errors.js';

/** `etcd://h1:p,h2:p` (or etcd+https://…) → `h1:p,h2:p`, as etcdctl's --endpoints takes them. */
export const etcdHosts = (endpoint: string) => endpoint.replace(/^etcd(\+https)?:\/\//, '');

/**
 * etcd3 errors as storctl errors: nothing above the store ever sees an etcd3 or gRPC class.
 * `leaseHex` names the lease when the call involved one.
 */
export function mapEtcdError(raw: unknown, endpoint: string, leaseHex?: string): Error {
  if (raw instanceof StorctlError) return raw;
  // Stream errors arrive as plain grpc-js errors (with a status code); give them etcd3's types.
  const err = raw instanceof Error && raw.constructor === Error ? castGrpcError(raw) : raw;
  const message = err instanceof Error ? err.message : String(err);
  const where = etcdHosts(endpoint);
  if (err instanceof EtcdLeaseInvalidError || message.includes('requested lease not found')) {
    return new NotFoundError('lease', leaseHex ?? 'unknown', {
      suggestions: ['the lease expired or was revoked; grant a new one'],
      cause: err,
    });
  }
  if (err instanceof GRPCUnauthenticatedError || err instanceof EtcdPermissionDeniedError) {
    return new StorctlError(
      'STORE_ACCESS_DENIED',
      `store ${endpoint} refused access: ${message}`,
      ExitCode.storeUnavailable,
      {
        suggestions: [
          'check the client certificate and key (--etcd-cert/--etcd-key) and etcd authentication',
        ],
        cause: err,
      },
    );
  }
  // etcd answers RESOURCE_EXHAUSTED, which etcd3 counts as recoverable: it is a refusal that lasts.
  if (isEtcdFull(message)) return etcdFull(endpoint, err, where);
  if (
    err instanceof GRPCUnavailableError ||
    err instanceof GRPCDeadlineExceededError ||
    err instanceof ClientClosedError ||
    (err instanceof Error && (isRecoverableError(err) || err.name === 'BrokenCircuitError'))
  ) {
    return unavailable(endpoint, shortGrpc(message), err, where);
  }
  if (err instanceof GRPCNotImplementedError || /UNIMPLEMENTED/.test(message)) {
    return unavailable(
      endpoint,
      `the endpoint does not speak the etcd v3 API (${shortGrpc(message)}); is it etcd?`,
      err,
    );
  }
  if (message.includes('mvcc: required revision is a future revision')) {
    return new UsageError(`store ${endpoint}: the requested revision is in the future`, { cause: err });
  }
  return new StorctlError('STORE_FAILED', `store ${endpoint}: ${message}`, ExitCode.failure, { cause: err });
}

/** etcd's answer to a write while its NOSPACE alarm is raised (etcd's ErrGRPCNoSpace). */
export const isEtcdFull = (message: string) => message.includes('mvcc: database space exceeded');

/** etcd refuses writes until its space quota has room again and the alarm is disarmed. */
export function etcdFull(endpoint: string, cause: unknown, where = etcdHosts(endpoint)) {
  const ctl = `etcdctl --endpoints=${where}`;
  return new StoreFullError(
    endpoint,
    "etcd's space quota is exhausted (alarm NOSPACE): it refuses every write",
    {
      suggestions: [
        `free space, then clear the alarm, each with \`${ctl}\`: \`compact REVISION\` (\`storctl doctor store\` prints it), \`defrag --cluster\`, \`alarm disarm\``,
        'or raise --quota-backend-bytes on every etcd member (and run etcd with --auto-compaction-retention)',
      ],
      cause,
    },
  );
}

export function unavailable(
  endpoint: string,
  detail: string,
  cause: unknown,
  where = etcdHosts(endpoint),
): StoreUnavailableError {
  return new StoreUnavailableError(endpoint, detail, {
    suggestions: [
      `check that etcd is running and reachable at ${where} (etcdctl --endpoints=${where} endpoint health)`,
      'for TLS use etcd+https:// (or --etcd-ca/--etcd-cert/--etcd-key) with the right files',
    ],
    cause,
  });
}

/** "14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED h:p. …" → "connect ECONNREFUSED h:p" */
export function shortGrpc(message: string): string {
  const short = message.replace(/^\w+Error:\s*/, '').replace(/^\d+ [A-Z_]+:\s*/, '');
  const last = /Last error: (?:Error: )?(.*?)\.?(?: Resolution note:.*)?$/.exec(short);
  return (last ? last[1] : short).trim() || 'no answer';
}
