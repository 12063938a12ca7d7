import { posix } from 'node:path';

/**
 * A target path from a CSI request must name one directory unambiguously: absolute, already in
 * canonical form (no `.`/`..` segments, no doubled or trailing slashes), printable, bounded. A path
 * that needs normalising is refused rather than normalised, so `..` can never walk out of the
 * kubelet's directory behind the caller's back.
 */
export function validateTargetPath(path: string, field = 'target_path'): string | undefined {
  if (!path) return `${field} is required`;
  if (path.length > 4096) return `${field} is longer than 4096 bytes`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting control characters is the point
  if (/[\x00-\x1f\x7f]/.test(path)) return `${field} contains control characters`;
  if (!path.startsWith('/')) return `${field} '${path}' is not absolute`;
  if (path.split('/').some((seg) => seg === '..' || seg === '.'))
    return `${field} '${path}' contains '.' or '..' segments (path traversal)`;
  if (path === '/' || posix.normalize(path) !== path || path.endsWith('/'))
    return `${field} '${path}' is not in canonical form`;
  if (path.split('/').some((seg) => Buffer.byteLength(seg) > 255))
    return `${field} has a path segment longer than 255 bytes`;
  return undefined;
}
