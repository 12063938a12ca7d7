import { join } from 'node:path';
import { defaultDataDir } from '../../lib/paths.js';
import type { AttachedDevice } from './attacher.js';
import type { FsType } from './fs-ops.js';

export interface CsiNodeConfig {
  /** unix:///path/csi.sock */
  endpoint: string;
  nodeId: string;
  /** Where the state file, the proxies' sockets, the FUSE mount points and logs live. */
  stateDir: string;
  /** Staging and target paths must lie below one of these. */
  roots: string[];
  /** Core REST URL: when set, the node registers as an app node there. */
  restUrl?: string;
  /** NodeFs listen address (loopback), registered as the app node's endpoint. */
  fsListen: { host: string; port: number };
  attacher: 'auto' | AttachedDevice['kind'];
  maxVolumes: number;
  defaultFsType: FsType;
  /** How long I/O waits for a lost path to come back (reconnect or re-point) before failing. */
  pathTimeoutMs: number;
  driverName: string;
  logLevel?: string;
}

/**
 * How long I/O waits for a lost path by default: 10 minutes, the Linux NVMe-oF initiator's default
 * ctrl_loss_tmo. Failing sooner turns a control-plane outage that outlasts a target's loss (core
 * restarting while HA waits to move the target) into EIO, and ext4 then goes read-only for good.
 */
export const DEFAULT_PATH_TIMEOUT_MS = 600_000;

/** Where csi-node keeps its state unless told otherwise. */
export function defaultCsiNodeStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.STORCTL_CSI_NODE_STATE_DIR ?? join(defaultDataDir(env), 'csi-node');
}
