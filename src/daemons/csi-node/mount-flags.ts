import type { FsType } from './fs-ops.js';

/**
 * Which mount flags a CO may pass for a block volume's filesystem. The kernel answers an unknown
 * option with mount(8)'s catch-all "wrong fs type, bad option, bad superblock" (exit 32), which
 * cannot be told apart from a broken device; checking the names first turns a client's typo into
 * INVALID_ARGUMENT naming the flag. The lists are the options of mount(8) and the kernel's ext4 and
 * xfs documentation (Documentation/admin-guide/ext4.rst, Documentation/admin-guide/xfs.rst).
 */

/** Filesystem-independent options (mount(8) "FILESYSTEM-INDEPENDENT MOUNT OPTIONS"). */
const GENERIC = [
  'defaults',
  'ro',
  'rw',
  'suid',
  'nosuid',
  'dev',
  'nodev',
  'exec',
  'noexec',
  'sync',
  'async',
  'dirsync',
  'atime',
  'noatime',
  'diratime',
  'nodiratime',
  'relatime',
  'norelatime',
  'strictatime',
  'nostrictatime',
  'lazytime',
  'nolazytime',
  'iversion',
  'noiversion',
  'mand',
  'nomand',
  'silent',
  'loud',
  'nosymfollow',
  // fstab-only words mount(8) accepts and ignores.
  'auto',
  'noauto',
  'nofail',
  '_netdev',
];

const EXT4 = [
  'journal_checksum',
  'nojournal_checksum',
  'journal_async_commit',
  'norecovery',
  'noload',
  'user_xattr',
  'nouser_xattr',
  'acl',
  'noacl',
  'bsddf',
  'minixdf',
  'debug',
  'grpid',
  'bsdgroups',
  'nogrpid',
  'sysvgroups',
  'quota',
  'noquota',
  'usrquota',
  'grpquota',
  'prjquota',
  'delalloc',
  'nodelalloc',
  'auto_da_alloc',
  'noauto_da_alloc',
  'noinit_itable',
  'init_itable',
  'discard',
  'nodiscard',
  'block_validity',
  'noblock_validity',
  'dioread_lock',
  'dioread_nolock',
  'i_version',
  'nombcache',
  'prefetch_block_bitmaps',
  'barrier',
  'nobarrier',
  'dax',
  'inlinecrypt',
];

const XFS = [
  'attr2',
  'noattr2',
  'discard',
  'nodiscard',
  'grpid',
  'bsdgroups',
  'nogrpid',
  'sysvgroups',
  'filestreams',
  'ikeep',
  'noikeep',
  'inode32',
  'inode64',
  'largeio',
  'nolargeio',
  'noalign',
  'norecovery',
  'nouuid',
  'noquota',
  'uquota',
  'usrquota',
  'uqnoenforce',
  'quota',
  'pquota',
  'prjquota',
  'pqnoenforce',
  'gquota',
  'grpquota',
  'gqnoenforce',
  'swalloc',
  'wsync',
  'dax',
];

const NUMBER = /^\d{1,10}$/;
const SIZE = /^\d{1,10}[kKmMgG]?$/;

/** Options that take a value, and the values each accepts. */
const GENERIC_VALUED: Record<string, RegExp> = {};
const EXT4_VALUED: Record<string, RegExp> = {
  data: /^(journal|ordered|writeback)$/,
  data_err: /^(ignore|abort)$/,
  errors: /^(continue|remount-ro|panic)$/,
  commit: NUMBER,
  barrier: /^[01]$/,
  resgid: NUMBER,
  resuid: NUMBER,
  sb: NUMBER,
  stripe: NUMBER,
  max_batch_time: NUMBER,
  min_batch_time: NUMBER,
  journal_ioprio: /^[0-7]$/,
  init_itable: NUMBER,
  max_dir_size_kb: NUMBER,
  dax: /^(always|never|inode)$/,
  mb_optimize_scan: /^[01]$/,
  jqfmt: /^(vfsold|vfsv0|vfsv1)$/,
};
const XFS_VALUED: Record<string, RegExp> = {
  allocsize: SIZE,
  logbufs: NUMBER,
  logbsize: SIZE,
  sunit: NUMBER,
  swidth: NUMBER,
  dax: /^(always|never|inode)$/,
};

const KNOWN: Record<FsType, { plain: Set<string>; valued: Record<string, RegExp> }> = {
  ext4: { plain: new Set([...GENERIC, ...EXT4]), valued: { ...GENERIC_VALUED, ...EXT4_VALUED } },
  xfs: { plain: new Set([...GENERIC, ...XFS]), valued: { ...GENERIC_VALUED, ...XFS_VALUED } },
};

/** Mount flags that would change what is mounted rather than how. */
const REFUSED = new Set(['bind', 'rbind', 'remount', 'move', 'make-shared', 'make-private']);

/** Why `flag` cannot be passed when mounting `fsType`, or undefined when it can. */
export function mountFlagProblem(fsType: FsType, flag: string): string | undefined {
  if (REFUSED.has(flag)) return `mount flag '${flag}' is not allowed`;
  const { plain, valued } = KNOWN[fsType];
  const eq = flag.indexOf('=');
  if (eq < 0) {
    if (plain.has(flag)) return undefined;
  } else {
    const key = flag.slice(0, eq);
    const accepts = Object.hasOwn(valued, key) ? valued[key] : undefined;
    if (accepts?.test(flag.slice(eq + 1))) return undefined;
    if (accepts) return `mount flag '${flag.slice(0, 64)}' has a value ${fsType} does not accept`;
  }
  return `mount flag '${flag.slice(0, 64)}' is not an ${fsType} mount option (see mount(8) and the kernel's ${fsType} documentation)`;
}
