/**
 * NBD wire constants (the "newstyle fixed" protocol as documented in NBD's proto.md). Only simple
 * replies are used: structured replies and extended headers are declined during negotiation, which
 * every client (qemu, libnbd, nbd-client) accepts.
 */

export const NBDMAGIC = 0x4e42444d41474943n;
export const IHAVEOPT = 0x49484156454f5054n;
export const OPT_REPLY_MAGIC = 0x3e889045565a9n;
export const REQUEST_MAGIC = 0x25609513;
export const SIMPLE_REPLY_MAGIC = 0x67446698;
export const STRUCTURED_REPLY_MAGIC = 0x668e33ef;

/** Handshake flags (server → client). */
export const FLAG_FIXED_NEWSTYLE = 1 << 0;
export const FLAG_NO_ZEROES = 1 << 1;
/** Client flags (client → server). */
export const FLAG_C_FIXED_NEWSTYLE = 1 << 0;
export const FLAG_C_NO_ZEROES = 1 << 1;

/** Transmission flags. */
export const TFLAG_HAS_FLAGS = 1 << 0;
export const TFLAG_READ_ONLY = 1 << 1;
export const TFLAG_SEND_FLUSH = 1 << 2;
export const TFLAG_SEND_FUA = 1 << 3;
export const TFLAG_ROTATIONAL = 1 << 4;
export const TFLAG_SEND_TRIM = 1 << 5;
export const TFLAG_SEND_WRITE_ZEROES = 1 << 6;
export const TFLAG_CAN_MULTI_CONN = 1 << 8;

export const Opt = {
  EXPORT_NAME: 1,
  ABORT: 2,
  LIST: 3,
  STARTTLS: 5,
  INFO: 6,
  GO: 7,
  STRUCTURED_REPLY: 8,
  LIST_META_CONTEXT: 9,
  SET_META_CONTEXT: 10,
  EXTENDED_HEADERS: 11,
} as const;

export const Rep = {
  ACK: 1,
  SERVER: 2,
  INFO: 3,
  ERR_UNSUP: 0x80000001,
  ERR_POLICY: 0x80000002,
  ERR_INVALID: 0x80000003,
  ERR_PLATFORM: 0x80000004,
  ERR_TLS_REQD: 0x80000005,
  ERR_UNKNOWN: 0x80000006,
  ERR_SHUTDOWN: 0x80000007,
  ERR_BLOCK_SIZE_REQD: 0x80000008,
  ERR_TOO_BIG: 0x80000009,
} as const;

export const Info = {
  EXPORT: 0,
  NAME: 1,
  DESCRIPTION: 2,
  BLOCK_SIZE: 3,
} as const;

export const Cmd = {
  READ: 0,
  WRITE: 1,
  DISC: 2,
  FLUSH: 3,
  TRIM: 4,
  CACHE: 5,
  WRITE_ZEROES: 6,
  BLOCK_STATUS: 7,
} as const;

export const CmdFlag = {
  FUA: 1 << 0,
  NO_HOLE: 1 << 1,
  DF: 1 << 2,
  FAST_ZERO: 1 << 4,
} as const;

/** Errno values carried in replies: Linux numbering, as the protocol mandates. */
export { Errno } from '../errno.js';

export const REQUEST_HEADER_SIZE = 28;
export const SIMPLE_REPLY_SIZE = 16;
/** Largest payload of one request we accept (qemu and libnbd default to 32 MiB max). */
export const MAX_REQUEST_SIZE = 32 * 1024 * 1024;
/** Largest option payload during negotiation. */
export const MAX_OPTION_SIZE = 64 * 1024;
/** Standard NBD port. */
export const DEFAULT_NBD_PORT = 10809;
