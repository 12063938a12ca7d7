import { KernelNbdAttacher, kernelNbdAvailable } from './attacher-kernel-nbd.js';
import { NbdfuseLoopAttacher } from './attacher-nbdfuse.js';
import type { ProxyRef } from './proxy.js';

/** A block device made from a volume's proxy socket, as the state file records it. */
export interface AttachedDevice {
  kind: 'nbdfuse-loop' | 'kernel-nbd';
  /** /dev/loopN or /dev/nbdN. */
  device: string;
  /** nbdfuse-loop: the FUSE mount point and the file the loop device is bound to. */
  fuseDir?: string;
  file?: string;
  fusePid?: number;
  fusePidStartTime?: string;
}

/**
 * Turns a volume's proxy socket into a block device and back. Two kinds, one interface: the kernel
 * NBD client where the nbd module exists, else nbdfuse + a loop device.
 */
export interface Attacher {
  readonly kind: AttachedDevice['kind'];
  /** The size the proxy should advertise to this attacher for a volume of `size` bytes. */
  advertisedSize(size: number): number | undefined;
  attach(o: { dir: string; proxy: ProxyRef; size: number }): Promise<AttachedDevice>;
  /** Undo attach; a device that is already gone is fine. */
  detach(d: AttachedDevice): Promise<void>;
  /** undefined when the device serves, else what is wrong with it. */
  problem(d: AttachedDevice): Promise<string | undefined>;
  /** Make the device show `size` bytes (the proxy already knows the new size). */
  grow(d: AttachedDevice, size: number): Promise<void>;
}

/** auto: the kernel NBD client where the nbd module exists, else nbdfuse + loop. */
export function selectAttacher(choice: 'auto' | AttachedDevice['kind']): Attacher {
  if (choice === 'kernel-nbd' || (choice === 'auto' && kernelNbdAvailable())) return new KernelNbdAttacher();
  return new NbdfuseLoopAttacher();
}

/** The attacher that made a recorded device (the configured choice may differ after a restart). */
export const attacherFor = (d: AttachedDevice): Attacher => selectAttacher(d.kind);
