import { FuseLoopAttacher } from './attacher-fuse.js';
import { KernelNbdAttacher, kernelNbdAvailable } from './attacher-kernel-nbd.js';
import { NbdfuseLoopAttacher } from './attacher-nbdfuse.js';
import type { ProxyRef } from './proxy.js';
import type { ProxyStatus } from './proxy-server.js';

/** A block device made from a volume's proxy socket, as the state file records it. */
export interface AttachedDevice {
  kind: 'fuse-loop' | 'nbdfuse-loop' | 'kernel-nbd';
  /** /dev/loopN or /dev/nbdN. */
  device: string;
  /** fuse-loop, nbdfuse-loop: the FUSE file the loop device is bound to. */
  file?: string;
  /** nbdfuse-loop: the FUSE mount point (a directory holding `file`) and nbdfuse's process. */
  fuseDir?: string;
  fusePid?: number;
  fusePidStartTime?: string;
}

/**
 * Turns a volume's path proxy into a block device and back. Three kinds, one interface: the kernel
 * NBD client where the nbd module exists, else a loop device on a FUSE file the proxy serves
 * (fuse-loop), or on nbdfuse's file of the proxy's socket (nbdfuse-loop, the earlier way).
 */
export interface Attacher {
  readonly kind: AttachedDevice['kind'];
  /** The size the proxy should advertise to this attacher for a volume of `size` bytes. */
  advertisedSize(size: number): number | undefined;
  attach(o: { dir: string; proxy: ProxyRef; size: number }): Promise<AttachedDevice>;
  /** Undo attach; a device that is already gone is fine. */
  detach(d: AttachedDevice): Promise<void>;
  /** undefined when the device serves, else what is wrong with it (`proxy`: its proxy's status). */
  problem(d: AttachedDevice, proxy: ProxyStatus): Promise<string | undefined>;
  /** Make the device show `size` bytes (the proxy already knows the new size). */
  grow(d: AttachedDevice, size: number): Promise<void>;
}

/** auto: the kernel NBD client where the nbd module exists, else the proxy's FUSE file + loop. */
export function selectAttacher(choice: 'auto' | AttachedDevice['kind']): Attacher {
  if (choice === 'kernel-nbd' || (choice === 'auto' && kernelNbdAvailable())) return new KernelNbdAttacher();
  if (choice === 'nbdfuse-loop') return new NbdfuseLoopAttacher();
  return new FuseLoopAttacher();
}

/** The attacher that made a recorded device (the configured choice may differ after a restart). */
export const attacherFor = (d: AttachedDevice): Attacher => selectAttacher(d.kind);
