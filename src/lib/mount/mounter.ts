import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import type { DaemonRef, MounterKind } from './state.js';

/** One FUSE daemon to run in the foreground; its output goes to `logFile` (see openDaemonLog). */
export interface DaemonSpec {
  id: string;
  target: string;
  argv: string[];
  /** Non-secret environment only (credential file paths, profile names). */
  env: Record<string, string>;
  logFile: string;
  description: string;
}

/** A FUSE daemon found on the node (doctor's view). */
export interface DaemonInfo {
  ref: DaemonRef;
  /** The target it serves, when it can be told (argv or unit name). */
  target?: string;
  /** active | activating | failed | inactive | running ... */
  state: string;
  name: string;
}

/**
 * Runs FUSE daemons: as transient systemd units (SystemdMounter) or as supervised detached
 * children (ProcessMounter). Mount-table checks, credentials and state live above this contract.
 */
export interface Mounter {
  readonly kind: MounterKind;
  /** Start the daemon; resolves once it runs (not once it mounted). */
  start(spec: DaemonSpec): Promise<DaemonRef>;
  isRunning(ref: DaemonRef): Promise<boolean>;
  /** The daemon of `target` if one runs (found again after a mounter restart). */
  find(target: string): Promise<DaemonRef | undefined>;
  /** Wait for the daemon to end (after its unmount), then force it and clean up its unit. */
  stop(ref: DaemonRef, timeoutMs: number): Promise<void>;
  /** Every daemon of this mounter on the node. */
  list(): Promise<DaemonInfo[]>;
  close(): Promise<void>;
}

/**
 * Empty the daemon's log and open it for its stdout and stderr in append mode. s3fs writes its log
 * lines through its own `logfile=` handle and buffers its stdout until exit; without O_APPEND that
 * last flush lands at offset 0, over the first log lines, and can erase the [CRT] line of a failed
 * bucket check while the mounter is still reading it.
 */
export function openDaemonLog(path: string): Promise<FileHandle> {
  const { O_WRONLY, O_CREAT, O_TRUNC, O_APPEND } = constants;
  return open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600);
}
