import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect } from 'vitest';
import { CsiClient } from '../../helpers/csi-client.js';
import { StorctlProcess } from '../../helpers/storctl.js';
import { waitFor } from '../../helpers/wait.js';
import { TestCluster } from '../core/cluster.js';

export const MiB = 1024 * 1024;

/** Default size of a volume whose capacity_range is empty, in these tests. */
export const DEFAULT_SIZE = 64 * MiB;

export interface ControllerFixture {
  cluster: TestCluster;
  proc: StorctlProcess;
  csi: CsiClient;
  socket: string;
  dir: string;
}

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

/**
 * A real cluster (core + three io-engines with 1 GiB pools) and the built csi-controller as a
 * process on a unix socket, called through a real gRPC client. Stops only what it started.
 */
export function controllerFixture(prefix: string): ControllerFixture {
  const fx = {} as ControllerFixture;
  beforeAll(async () => {
    fx.dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
    fx.cluster = await TestCluster.start();
    const { proc, socket } = await startController(fx.dir, fx.cluster.restUrl, fx.cluster.env);
    fx.proc = proc;
    fx.socket = socket;
    fx.csi = new CsiClient(socket);
  }, 120_000);
  afterAll(async () => {
    fx.csi?.close();
    await fx.proc?.kill('SIGTERM');
    await fx.cluster?.stop();
    if (fx.dir) rmSync(fx.dir, { recursive: true, force: true });
  }, 120_000);
  return fx;
}

/** The error of a call that must fail (its gRPC code and details). */
export async function failure(p: Promise<unknown>): Promise<{ code: number; details: string }> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err, 'the call must fail').toBeDefined();
  return err;
}

/** The call fails with `code`, and its message matches `message` when given. */
export async function refused(p: Promise<unknown>, code: status, message?: RegExp): Promise<string> {
  const err = await failure(p);
  expect({ code: err.code, details: err.details }).toMatchObject({ code });
  if (message) expect(err.details).toMatch(message);
  return err.details;
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
