import type { FuseBinaryName } from '../../lib/mount/fuse-binary.js';

export type MounterChoice = 'systemd' | 'process' | 'auto';

export interface MounterDaemonConfig {
  /** unix:///path/csi.sock */
  endpoint: string;
  nodeId: string;
  mounter: MounterChoice;
  /** D-Bus address of the systemd manager's bus (default: the system bus). */
  systemdBus?: string;
  fuseBinary?: FuseBinaryName;
  s3Endpoint?: string;
  s3Region?: string;
  stateDir: string;
  /** Directories target paths must lie below (default: the kubelet's, /var/lib/kubelet). */
  roots?: string[];
  mountTimeoutMs: number;
  /** Driver-level keys: a file of key=value lines; else AWS_* of `env`. */
  secretsFile?: string;
  env?: NodeJS.ProcessEnv;
  logLevel?: string;
}

export const PLUGIN_NAME = 's3.csi.storctl.io';

export { socketPathOf } from '../../lib/csi/socket.js';
