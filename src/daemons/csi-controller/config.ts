import type { KubeAccess } from '../../lib/orphans/kube/config.js';

/** Configuration of `storctl daemon csi-controller` (every duration from flags, so tests run fast). */
export interface CsiControllerConfig {
  /** unix:///path/csi-controller.sock */
  endpoint: string;
  /** core's REST API, http://host:port */
  restUrl: string;
  /** GetPluginInfo name, a reverse-domain name. */
  driverName: string;
  /** Per-request timeout towards core. */
  restTimeoutMs: number;
  /** Size of a volume whose capacity_range says nothing. */
  defaultVolumeSize: number;
  /** Deadline of each freeze / unfreeze call to a csi-node, and the node's own thaw timeout. */
  freezeTimeoutMs: number;
  /** The sweep of volumes without PV or PVC (needs a Kubernetes API): off, report, or delete. */
  orphanGc?: { mode: 'report' | 'delete'; kube: KubeAccess; periodMs: number; graceMs: number };
  logLevel?: string;
}

export const CSI_CONTROLLER_DEFAULTS = {
  restTimeoutMs: 30_000,
  defaultVolumeSize: 1024 * 1024 * 1024,
  freezeTimeoutMs: 10_000,
} as const;

/** CSI names are domain names: lowercase alphanumerics, '-' and '.', at most 63 characters. */
export const DRIVER_NAME_RE = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;
