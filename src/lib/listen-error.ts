import { ConflictError } from './errors.js';

/**
 * A server that could not listen, said as an operator needs it: what and where, "address already in
 * use" for EADDRINUSE, and the flag that picks another address (exit 4).
 */
export function listenError(
  what: string,
  address: string,
  flag: string,
  err: unknown,
  { orOff = false } = {},
): ConflictError {
  const detail = err instanceof Error ? err.message : String(err);
  const inUse = /EADDRINUSE/.test(detail);
  return new ConflictError(
    inUse ? 'ADDRESS_IN_USE' : 'LISTEN_FAILED',
    `cannot serve ${what} on ${address}: ${inUse ? 'address already in use' : detail}`,
    { suggestions: [`pass another ${flag} HOST:PORT (port 0 picks a free one)${orOff ? ', or off' : ''}`] },
  );
}
