import { realpath } from 'node:fs/promises';
import { dirname } from 'node:path';
import { invalid } from '../../lib/csi/validate.js';
import { isCorruptedMountError } from '../../lib/mount/health.js';
import { validateTargetPath } from '../../lib/mount/target-path.js';

/** Never a target, whatever the roots say. */
const FORBIDDEN = ['/proc', '/sys', '/dev', '/run/udev'];

const under = (path: string, root: string) =>
  path === root || path.startsWith(root === '/' ? '/' : `${root}/`);

/** The deepest existing ancestor of `path` (itself included), resolved through symlinks. */
async function resolvedAncestor(path: string): Promise<{ real: string; rest: string }> {
  let p = path;
  let rest = '';
  for (;;) {
    try {
      return { real: await realpath(p), rest };
    } catch (err) {
      // A dead mount (ENOTCONN, EIO…) is resolved through its parent, so it can still be repaired.
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'ENOENT' && !isCorruptedMountError(err)) || p === '/') throw err;
      rest = `/${p.slice(dirname(p).length + (dirname(p) === '/' ? 0 : 1))}${rest}`;
      p = dirname(p);
    }
  }
}

/**
 * A staging or target path from a request, confined to the configured roots: canonical (no `.`,
 * `..`, doubled or trailing slashes), below a root, and still below it once symlinks in its existing
 * part are resolved; never under /proc, /sys or /dev. INVALID_ARGUMENT naming the field otherwise.
 */
export async function confinePath(
  value: string | undefined,
  field: string,
  roots: string[],
): Promise<string> {
  const problem = validateTargetPath(value ?? '', field);
  if (problem) throw invalid(problem);
  const path = value!;
  if (FORBIDDEN.some((f) => under(path, f))) throw invalid(`${field} '${path}' is in a system directory`);
  const root = roots.find((r) => under(path, r) && path !== r);
  if (!root) throw invalid(`${field} '${path}' is outside the allowed roots (${roots.join(', ')})`);
  let resolved: string;
  try {
    const { real, rest } = await resolvedAncestor(path);
    resolved = real + rest;
  } catch (err) {
    throw invalid(`${field} '${path}' cannot be resolved: ${(err as NodeJS.ErrnoException).code}`);
  }
  const realRoot = await realpath(root).catch(() => root);
  if (!under(resolved, realRoot) || FORBIDDEN.some((f) => under(resolved, f)))
    throw invalid(`${field} '${path}' leads outside ${root} through a symlink (to ${resolved})`);
  return path;
}
