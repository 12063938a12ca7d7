import { lstat, mkdir, realpath } from 'node:fs/promises';
import { dirname } from 'node:path';
import { invalid } from '../csi/validate.js';
import { UsageError } from '../errors.js';
import { isCorruptedMountError } from './health.js';
import { validateTargetPath } from './target-path.js';

/** Where kubelet puts staging and target paths: the default root of both CSI node plugins. */
export const KUBELET_DIR = '/var/lib/kubelet';

/** `--root` values of a node plugin, checked like target paths; the kubelet's directory by default. */
export function targetRoots(values: string[] | undefined): string[] {
  const roots = values?.length ? values : [KUBELET_DIR];
  for (const r of roots) {
    const problem = validateTargetPath(r, '--root');
    if (problem) throw new UsageError(problem);
  }
  return roots;
}

/** Never a target, whatever the roots say. */
const FORBIDDEN = ['/proc', '/sys', '/dev', '/run/udev'];

const under = (path: string, root: string) =>
  path === root || path.startsWith(root === '/' ? '/' : `${root}/`);

class DanglingSymlink extends Error {
  constructor(readonly link: string) {
    super(`symlink ${link} points to a path that does not exist`);
  }
}

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
      // A dangling symlink is not a missing directory: where it points is unknown, maybe outside.
      if (code === 'ENOENT' && (await lstat(p).catch(() => null))?.isSymbolicLink())
        throw new DanglingSymlink(p);
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
    if (err instanceof DanglingSymlink)
      throw invalid(`${field} '${path}' passes through ${err.message}; use a real directory below the root`);
    throw invalid(`${field} '${path}' cannot be resolved: ${(err as NodeJS.ErrnoException).code}`);
  }
  const realRoot = await realpath(root).catch(() => root);
  if (!under(resolved, realRoot) || FORBIDDEN.some((f) => under(resolved, f)))
    throw invalid(`${field} '${path}' leads outside ${root} through a symlink (to ${resolved})`);
  return path;
}

/** Directories a publish may create on its way to a target, counted from the root. */
const MAX_NEW_DIRS = 16;

/**
 * Create `path` and its missing ancestors below `root`, one `mkdir` at a time (never recursive:
 * Node's recursive mkdir can spin forever on /proc-like paths), at most 16 of them; returns what it
 * created, outermost first, so a failed publish removes exactly that again.
 */
export async function makeDirsUnder(path: string, root: string): Promise<string[]> {
  const missing: string[] = [];
  for (let p = path; under(p, root) && p !== root; p = dirname(p)) {
    if (await exists(p)) break;
    missing.unshift(p);
    if (missing.length > MAX_NEW_DIRS)
      throw invalid(`'${path}' lies more than ${MAX_NEW_DIRS} missing directories below ${root}`);
  }
  const created: string[] = [];
  for (const dir of missing) {
    await mkdir(dir, { mode: 0o750 });
    created.push(dir);
  }
  return created;
}

const exists = (p: string) =>
  lstat(p).then(
    () => true,
    (err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? false : Promise.reject(err)),
  );

/** The root a confined path lies below. */
export function rootOf(path: string, roots: string[]): string {
  return roots.find((r) => under(path, r) && path !== r) ?? '/';
}
