/**
 * storctl's error taxonomy. Library code throws these; each boundary maps them once
 * (REST kind + HTTP status, gRPC status, CLI exit code). Every error a user sees says what failed,
 * on what, and what to do next.
 */

/** Process exit codes, documented in the README. */
export const ExitCode = {
  ok: 0,
  /** Unexpected failure (a bug, or an error not classified below). */
  failure: 1,
  /** Bad flags, arguments or input. Nothing was changed. */
  usage: 2,
  /** The named resource does not exist. */
  notFound: 3,
  /** The resource exists, is busy, or is in a state that forbids the request. */
  conflict: 4,
  /** The store (etcd or the embedded database) cannot be reached, opened, or written (it is full). */
  storeUnavailable: 5,
  /** A storctl daemon (core REST, io-engine, CSI socket) cannot be reached. */
  serviceUnavailable: 6,
  /** The operation did not finish in time. */
  timeout: 7,
  /** A stored value could not be decoded. */
  corrupt: 8,
  /** `doctor store`: it found warnings (and no errors). */
  doctorWarnings: 10,
  /** `doctor store`: it found at least one error. */
  doctorErrors: 11,
  /**
   * The reader of stdout went away (`storctl get volumes | head`): what a shell reports for a tool
   * that SIGPIPE ended, as it does for etcdctl and kubectl there.
   */
  outputClosed: 141,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export interface StorctlErrorOptions {
  /** Next steps shown to the user, e.g. "run `storctl get volumes` to list volumes". */
  suggestions?: string[];
  cause?: unknown;
}

export class StorctlError extends Error {
  readonly suggestions: string[];
  constructor(
    /** Stable machine-readable code, e.g. VOLUME_NOT_FOUND. */
    readonly code: string,
    message: string,
    readonly exitCode: ExitCodeValue = ExitCode.failure,
    options: StorctlErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.suggestions = options.suggestions ?? [];
  }
}

export class UsageError extends StorctlError {
  constructor(message: string, options?: StorctlErrorOptions) {
    super('USAGE', message, ExitCode.usage, options);
  }
}

export class NotFoundError extends StorctlError {
  constructor(resource: string, id: string, options?: StorctlErrorOptions) {
    super(
      `${resource.toUpperCase().replace(/[^A-Z0-9]+/g, '_')}_NOT_FOUND`,
      `${resource} '${id}' not found`,
      ExitCode.notFound,
      options,
    );
  }
}

export class ConflictError extends StorctlError {
  constructor(code: string, message: string, options?: StorctlErrorOptions) {
    super(code, message, ExitCode.conflict, options);
  }
}

/** A client library's detail, or a plain statement when it has none (never "unreachable: null"). */
const detailText = (detail: string | null | undefined) =>
  !detail || detail === 'null' || detail === 'undefined'
    ? 'no answer (connection refused, reset or timed out)'
    : plainGrpcDetail(detail);

/**
 * A gRPC error's text for people: its deadline text goes on with gRPC's internal timings ("…,name
 * resolution: 0.005s,Waiting for LB pick"), where what matters is that nothing answered in time.
 */
export function plainGrpcDetail(detail: string): string {
  const deadline = /^Deadline exceeded after ([\d.]+)s\b/.exec(detail);
  if (!deadline) return detail;
  const s = Number(deadline[1]);
  return `no answer within ${s < 1 ? `${Math.round(s * 1000)} ms` : `${Math.round(s)} s`} (deadline exceeded)`;
}

/** The store cannot be reached or opened: names the endpoint and what to check. */
export class StoreUnavailableError extends StorctlError {
  constructor(
    readonly endpoint: string,
    detail: string,
    options?: StorctlErrorOptions,
  ) {
    super(
      'STORE_UNAVAILABLE',
      `store ${endpoint} is unreachable: ${detailText(detail)}`,
      ExitCode.storeUnavailable,
      options,
    );
  }
}

/**
 * The store refused a write for want of space (etcd's NOSPACE alarm, a full disk under the embedded
 * store): a definite refusal, so nothing of the write was applied. Exit code 5, as a store that
 * cannot be used until its operator acts.
 */
export class StoreFullError extends StorctlError {
  constructor(
    readonly endpoint: string,
    detail: string,
    options?: StorctlErrorOptions,
  ) {
    super(
      'STORE_FULL',
      `store ${endpoint} is full: ${detail}; nothing was written`,
      ExitCode.storeUnavailable,
      options,
    );
  }
}

export class ServiceUnavailableError extends StorctlError {
  constructor(service: string, endpoint: string, detail: string, options?: StorctlErrorOptions) {
    super(
      'SERVICE_UNAVAILABLE',
      `${service} at ${endpoint} is unreachable: ${detailText(detail)}`,
      ExitCode.serviceUnavailable,
      options,
    );
  }
}

export class TimeoutError extends StorctlError {
  constructor(message: string, options?: StorctlErrorOptions) {
    super('TIMEOUT', message, ExitCode.timeout, options);
  }
}

/** A stored value does not decode: names the key and the field. */
export class DecodeError extends StorctlError {
  constructor(
    readonly key: string,
    readonly field: string,
    readonly detail: string,
    options?: StorctlErrorOptions,
  ) {
    super('DECODE_FAILED', `cannot decode ${key}: field '${field}' ${detail}`, ExitCode.corrupt, options);
  }
}

export function isStorctlError(err: unknown): err is StorctlError {
  return err instanceof StorctlError;
}
