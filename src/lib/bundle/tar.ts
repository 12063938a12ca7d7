import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { createGzip } from 'node:zlib';

export interface TarEntry {
  /** Path inside the archive (`/`-separated, relative). */
  name: string;
  content: Buffer | string;
  mode?: number;
}

const BLOCK = 512;

/** A ustar header: name (split into prefix/name past 100 bytes), mode, size, mtime, checksum. */
function header(name: string, size: number, mode: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let prefix = '';
  let base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', name.length - 1);
    prefix = name.slice(0, cut);
    base = name.slice(cut + 1);
    if (cut < 0 || Buffer.byteLength(base) > 100 || Buffer.byteLength(prefix) > 155)
      throw new Error(`archive path too long: ${name}`);
  }
  const octal = (v: number, len: number, at: number) =>
    h.write(`${v.toString(8).padStart(len - 1, '0')}\0`, at, 'ascii');
  h.write(base, 0, 'utf8');
  octal(mode, 8, 100);
  octal(0, 8, 108); // uid
  octal(0, 8, 116); // gid
  octal(size, 12, 124);
  octal(Math.floor(mtime / 1000), 12, 136);
  h.write('        ', 148, 'ascii'); // checksum counts as spaces while summing
  h.write('0', 156, 'ascii'); // regular file
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  h.write(prefix, 345, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

/**
 * Write a gzip-compressed ustar archive of in-memory files (the support bundle), mode 0600: it
 * holds logs and the store's contents. No dependency: the format is 512-byte headers and padding.
 */
export async function writeTarGz(file: string, entries: TarEntry[], mtime = Date.now()): Promise<void> {
  const out = createWriteStream(file, { mode: 0o600 });
  const gz = createGzip();
  gz.pipe(out);
  for (const e of entries) {
    const body = typeof e.content === 'string' ? Buffer.from(e.content) : e.content;
    gz.write(header(e.name, body.length, e.mode ?? 0o644, mtime));
    gz.write(body);
    const pad = (BLOCK - (body.length % BLOCK)) % BLOCK;
    if (pad) gz.write(Buffer.alloc(pad));
  }
  gz.end(Buffer.alloc(BLOCK * 2));
  await finished(out);
}
