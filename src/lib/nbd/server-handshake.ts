import type { Socket } from 'node:net';
import type { BlockBackend } from './backend.js';
import {
  Info,
  MAX_REQUEST_SIZE,
  OPT_REPLY_MAGIC,
  Opt,
  Rep,
  TFLAG_CAN_MULTI_CONN,
  TFLAG_HAS_FLAGS,
  TFLAG_READ_ONLY,
  TFLAG_SEND_FLUSH,
  TFLAG_SEND_FUA,
  TFLAG_SEND_TRIM,
  TFLAG_SEND_WRITE_ZEROES,
} from './protocol.js';

export interface ExportLookup {
  get(name: string): BlockBackend | undefined;
  names(): string[];
}

/** What option negotiation needs from the connection it runs on. */
export interface OptionContext {
  socket: Socket;
  exports: ExportLookup;
  /** The client set NBD_FLAG_C_NO_ZEROES (EXPORT_NAME reply without the 124 zero bytes). */
  noZeroes: boolean;
  /** Read nothing more: the socket is being closed. */
  stopParsing(): void;
  /** Negotiation is over: serve `backend` as `name`. */
  enterTransmission(name: string, backend: BlockBackend): void;
}

function optReply(ctx: OptionContext, option: number, type: number, data?: Buffer): void {
  const h = Buffer.allocUnsafe(20);
  h.writeBigUInt64BE(OPT_REPLY_MAGIC, 0);
  h.writeUInt32BE(option, 8);
  h.writeUInt32BE(type >>> 0, 12);
  h.writeUInt32BE(data?.length ?? 0, 16);
  ctx.socket.write(data?.length ? Buffer.concat([h, data]) : h);
}

function optError(ctx: OptionContext, option: number, type: number, message: string): void {
  optReply(ctx, option, type, Buffer.from(message, 'utf8'));
}

function transmissionFlags(backend: BlockBackend): number {
  let f =
    TFLAG_HAS_FLAGS |
    TFLAG_SEND_FLUSH |
    TFLAG_SEND_FUA |
    TFLAG_SEND_TRIM |
    TFLAG_SEND_WRITE_ZEROES |
    TFLAG_CAN_MULTI_CONN;
  if (backend.readOnly) f |= TFLAG_READ_ONLY;
  return f;
}

/** Answer one option of fixed-newstyle negotiation; EXPORT_NAME and GO end it, ABORT closes. */
export function handleOption(ctx: OptionContext, code: number, data: Buffer): void {
  switch (code) {
    case Opt.EXPORT_NAME: {
      const name = data.toString('utf8');
      const backend = ctx.exports.get(name);
      if (!backend) {
        ctx.socket.destroy(); // the protocol has no error reply for EXPORT_NAME
        ctx.stopParsing();
        return;
      }
      const b = Buffer.alloc(ctx.noZeroes ? 10 : 134);
      b.writeBigUInt64BE(BigInt(backend.size), 0);
      b.writeUInt16BE(transmissionFlags(backend), 8);
      ctx.socket.write(b);
      ctx.enterTransmission(name, backend);
      return;
    }
    case Opt.ABORT:
      optReply(ctx, code, Rep.ACK);
      ctx.stopParsing();
      ctx.socket.end();
      return;
    case Opt.LIST: {
      if (data.length) {
        optError(ctx, code, Rep.ERR_INVALID, 'LIST takes no data');
        return;
      }
      for (const name of ctx.exports.names()) {
        const n = Buffer.from(name, 'utf8');
        const d = Buffer.allocUnsafe(4 + n.length);
        d.writeUInt32BE(n.length, 0);
        n.copy(d, 4);
        optReply(ctx, code, Rep.SERVER, d);
      }
      optReply(ctx, code, Rep.ACK);
      return;
    }
    case Opt.INFO:
    case Opt.GO: {
      infoOrGo(ctx, code, data);
      return;
    }
    default: {
      optError(ctx, code, Rep.ERR_UNSUP, `option ${code} not supported`);
      return;
    }
  }
}

function infoOrGo(ctx: OptionContext, code: number, data: Buffer): void {
  if (data.length < 6) {
    optError(ctx, code, Rep.ERR_INVALID, 'option data too short');
    return;
  }
  const nameLen = data.readUInt32BE(0);
  if (4 + nameLen + 2 > data.length) {
    optError(ctx, code, Rep.ERR_INVALID, 'bad export name length');
    return;
  }
  const name = data.toString('utf8', 4, 4 + nameLen);
  const nInfo = data.readUInt16BE(4 + nameLen);
  if (4 + nameLen + 2 + nInfo * 2 !== data.length) {
    optError(ctx, code, Rep.ERR_INVALID, 'bad info request list');
    return;
  }
  const requested = new Set<number>();
  for (let i = 0; i < nInfo; i++) requested.add(data.readUInt16BE(4 + nameLen + 2 + i * 2));
  const backend = ctx.exports.get(name);
  if (!backend) {
    optError(ctx, code, Rep.ERR_UNKNOWN, `export '${name}' not found`);
    return;
  }
  const exp = Buffer.allocUnsafe(12);
  exp.writeUInt16BE(Info.EXPORT, 0);
  exp.writeBigUInt64BE(BigInt(backend.size), 2);
  exp.writeUInt16BE(transmissionFlags(backend), 10);
  optReply(ctx, code, Rep.INFO, exp);
  if (requested.has(Info.NAME)) {
    const n = Buffer.from(name, 'utf8');
    const d = Buffer.allocUnsafe(2 + n.length);
    d.writeUInt16BE(Info.NAME, 0);
    n.copy(d, 2);
    optReply(ctx, code, Rep.INFO, d);
  }
  const bs = Buffer.allocUnsafe(14);
  bs.writeUInt16BE(Info.BLOCK_SIZE, 0);
  bs.writeUInt32BE(1, 2);
  bs.writeUInt32BE(4096, 6);
  bs.writeUInt32BE(MAX_REQUEST_SIZE, 10);
  optReply(ctx, code, Rep.INFO, bs);
  optReply(ctx, code, Rep.ACK);
  if (code === Opt.GO) ctx.enterTransmission(name, backend);
}
