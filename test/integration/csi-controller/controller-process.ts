import { join } from 'node:path';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';

/** The csi-controller as a process and request builders, without vitest (the benchmark uses them too). */

export const MiB = 1024 * 1024;

/** Default size of a volume whose capacity_range is empty, in these tests. */
export const DEFAULT_SIZE = 64 * MiB;

/** Start `storctl daemon csi-controller` on a unix socket in `dir` against `restUrl`; resolves once it listens. */
export async function startController(
  dir: string,
  restUrl: string,
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
): Promise<{ proc: StorctlProcess; socket: string }> {
  const socket = join(dir, 'csi', 'controller.sock');
  const proc = new StorctlProcess(
    [
      'daemon',
      'csi-controller',
      '--endpoint',
      `unix://${socket}`,
      '--rest',
      restUrl,
      '--default-volume-size',
      '64MiB',
      '--freeze-timeout',
      '5s',
      ...extra,
    ],
    env,
  );
  await waitFor(
    () =>
      proc.output.includes('csi-controller listening') ||
      (proc.running ? null : Promise.reject(new Error(`csi-controller exited: ${proc.output}`))),
    { what: 'csi-controller listening' },
  );
  return { proc, socket };
}

export const mountCap = (mode = 'SINGLE_NODE_WRITER', fsType = 'ext4') => ({
  mount: { fs_type: fsType, mount_flags: [] },
  access_mode: { mode },
});
export const blockCap = (mode = 'SINGLE_NODE_WRITER') => ({ block: {}, access_mode: { mode } });

export function createRequest(
  name: string,
  o: {
    required?: number;
    limit?: number;
    parameters?: Record<string, string>;
    caps?: unknown[];
    source?: unknown;
    topology?: unknown;
  } = {},
) {
  return {
    name,
    capacity_range:
      o.required !== undefined || o.limit !== undefined
        ? { required_bytes: String(o.required ?? 0), limit_bytes: String(o.limit ?? 0) }
        : null,
    volume_capabilities: o.caps ?? [mountCap()],
    parameters: o.parameters ?? {},
    volume_content_source: o.source ?? null,
    accessibility_requirements: o.topology ?? null,
  };
}

export interface CsiVolume {
  volume_id: string;
  capacity_bytes: string;
  volume_context: Record<string, string>;
  content_source: { snapshot?: { snapshot_id: string } } | null;
  accessible_topology: { segments: Record<string, string> }[];
}

export interface CsiSnapshot {
  snapshot_id: string;
  source_volume_id: string;
  size_bytes: string;
  ready_to_use: boolean;
  creation_time: { seconds: string; nanos: number };
}
